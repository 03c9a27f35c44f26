// Freed pinned memory that nothing may touch: while a freed block sits in
// the checker's quarantine its pages are inaccessible (PROT_NONE), and a
// fault on them stops the program with a diagnostic naming the block and
// what touched it (a host function of a stream, or a host thread). Copies
// never fault on them: the checker tells quarantined blocks apart first.
//
// That is how a host function reading pinned memory freed under it is
// caught: its reads cannot be seen otherwise (host functions do not declare
// what they touch), and poison alone would be read silently.
//
// The fault handler is installed on first use and hands faults elsewhere to
// the handler it replaced (ASan's, or the default); it is removed once
// nothing is guarded (the owner of the blocks calls remove_handler_if_unused
// when it goes, so no handler outlives the plugin). Linux only.
//
// Thread-safety: free functions, callable from any thread; the handler is
// async-signal-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace keel::cpu::guarded_pages {

// Makes the pages spanning [base, base + size) inaccessible and remembers
// them as pinned block `id`: `base` must be page-aligned and the block must
// own whole pages up to the rounded end.
// false (nothing changed) when the table of guarded ranges is full or the
// pages could not be protected: the block then stays only poisoned.
[[nodiscard]] bool protect(std::byte* base, std::uint64_t size, std::uint64_t id) noexcept;
// Makes a protected range accessible again (before its memory is freed).
void unprotect(std::byte* base, std::uint64_t size) noexcept;
// Puts the replaced fault handlers back if no range is guarded any more.
void remove_handler_if_unused() noexcept;

// While alive, a fault on this thread names the host function of `stream`
// as what touched the freed memory.
class RunningHostFunction {
public:
    explicit RunningHostFunction(std::uint64_t stream) noexcept;
    RunningHostFunction(const RunningHostFunction&) = delete;
    RunningHostFunction& operator=(const RunningHostFunction&) = delete;
    ~RunningHostFunction();

private:
    std::uint64_t previous_;
};

}  // namespace keel::cpu::guarded_pages
