// How the checker names a queued operation in its reports:
// "memcpy_d2h #3 on stream 2", "kernel axpy #7 on stream 1".
#pragma once

#include <cstdint>
#include <string>

namespace keel::cpu {

struct OpRef {
    const char* kind = "";  // "kernel " for kernels, "" otherwise
    const char* name = "";  // op or kernel name (static storage)
    std::uint64_t position = 0;
    std::uint64_t stream = 0;
    [[nodiscard]] std::string describe() const {
        return std::string(kind) + name + " #" + std::to_string(position) + " on stream " + std::to_string(stream);
    }
};

}  // namespace keel::cpu
