// Host memory that nothing may touch, and a fault handler that stops the
// program with a diagnostic when something does:
//
//  * freed pinned memory: while a freed block sits in the checker's
//    quarantine its pages are inaccessible (PROT_NONE). That is how a host
//    function reading pinned memory freed under it is caught: its reads
//    cannot be seen otherwise (host functions do not declare what they
//    touch), and poison alone would be read silently. Copies never fault on
//    them: the checker tells quarantined blocks apart first.
//  * the destination of a pending device-to-host copy: from the enqueue
//    until the host OBSERVED the copy's completion, the whole pages of the
//    destination are inaccessible (the checker guards and releases them).
//    The stream workers reach them through HostAccess; a host function of
//    the copy's own stream enqueued before the copy may touch them too (it
//    runs first, as stream order says): its fault opens the page until the
//    function returns.
//
// The fault handler is installed on first use and hands faults elsewhere to
// the handler it replaced (ASan's, or the default); it is removed once
// nothing is guarded (the owners call remove_handler_if_unused when they
// go, so no handler outlives the plugin). Linux only.
//
// Thread-safety: free functions and RAII types, callable from any thread;
// the handler is async-signal-safe.
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

// ---- destinations of pending device-to-host copies --------------------------

// What the diagnostic names. [begin, end) are the guarded whole pages
// (page-aligned, non-empty), inside or equal to the pages of the copy's
// destination [copy_begin, copy_end).
struct PendingWrite {
    std::uintptr_t begin = 0;
    std::uintptr_t end = 0;
    std::uintptr_t copy_begin = 0;
    std::uintptr_t copy_end = 0;
    std::uint64_t stream = 0;
    std::uint64_t position = 0;   // the copy's position on its stream
    std::uint64_t pinned_id = 0;  // 0: pageable memory
};
// Makes the pages inaccessible; returns a handle, or 0 (nothing changed)
// when the table is full or the pages could not be protected.
[[nodiscard]] std::uint64_t guard_pending_write(const PendingWrite& w) noexcept;
// The host observed the copy: its pages become accessible again, except
// those another pending copy still guards.
void release_pending_write(std::uint64_t handle) noexcept;

// What became of a guarded destination before its copy ran.
enum class PageState : std::uint8_t { guarded, unmapped, remapped };
struct PageCheck {
    PageState state = PageState::guarded;
    std::uintptr_t page = 0;  // the first page found not guarded
};
// Whether the pages of `handle` are still mapped and inaccessible (the
// program did not free and map them again meanwhile). Checks every page of
// ranges up to 256 pages, else 256 pages spread over it and the last one.
[[nodiscard]] PageCheck check_pending_write(std::uint64_t handle) noexcept;

// A stream worker's access to host memory: while alive, the guarded pages
// of pending copies inside [p, p + size) are accessible (other threads could
// touch them meanwhile unnoticed: a window as long as one copy). Serialised
// with every other change of the guards. ok() false: some of those pages
// could not be made accessible (unmapped).
class HostAccess {
public:
    HostAccess(const void* p, std::uint64_t size) noexcept;
    HostAccess(const HostAccess&) = delete;
    HostAccess& operator=(const HostAccess&) = delete;
    ~HostAccess();
    [[nodiscard]] bool ok() const noexcept { return ok_; }

private:
    std::uintptr_t begin_ = 0, end_ = 0;
    bool locked_ = false;
    bool ok_ = true;
};

// While alive, a fault on this thread names the host function of `stream`
// (at `position`) as what touched guarded memory; it may touch pages a copy
// enqueued after it on its own stream guards.
class RunningHostFunction {
public:
    RunningHostFunction(std::uint64_t stream, std::uint64_t position) noexcept;
    RunningHostFunction(const RunningHostFunction&) = delete;
    RunningHostFunction& operator=(const RunningHostFunction&) = delete;
    ~RunningHostFunction();

private:
    std::uint64_t previous_stream_;
    std::uint64_t previous_position_;
};

}  // namespace keel::cpu::guarded_pages
