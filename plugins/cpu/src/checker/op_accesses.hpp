// What one queued operation reads and writes, as the checker sees it at
// enqueue: device ranges, and the host side of copies. Kernel buffers carry
// the intent the kernel declares (KernelWork::use), never the call site's.
#pragma once

#include "../op.hpp"

#include <cstdint>
#include <vector>

namespace keel::cpu {

struct OpAccess {
    bool device = true;      // a device address; else a host pointer
    std::uint64_t addr = 0;  // device address or host pointer value
    std::uint64_t size = 0;
    bool write = false;
    const char* role = "";  // "source", "destination", or a kernel parameter's name
};

// Appends the accesses of `op` (filled, not yet queued) to `out`.
void accesses_of(const Op& op, std::vector<OpAccess>& out);

}  // namespace keel::cpu
