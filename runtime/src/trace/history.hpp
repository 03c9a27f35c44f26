// Memory history: with it on, each buffer remembers where it was allocated
// (the innermost MemoryTag of the allocating thread, else the file and line
// of the Buffer::allocate call), for MemorySnapshot.
//
// Threads: Sync (one process-wide table behind a mutex, used only while
// history is on; one relaxed load otherwise).
#pragma once

#include <keel/keel.h>

#include <atomic>
#include <cstdint>
#include <source_location>
#include <string>

namespace keel::trace {

alignas(64) extern std::atomic<bool> g_history;

[[nodiscard]] inline bool history_on() noexcept { return g_history.load(std::memory_order_relaxed); }

// Blocks with a tag: frees forget theirs even after history was switched off.
extern std::atomic<std::uint64_t> g_history_entries;
[[nodiscard]] inline bool history_kept() noexcept { return g_history_entries.load(std::memory_order_relaxed) != 0; }

// Remembers the tag of the block at `addr` of allocator `owner`.
void remember_allocation(const void* owner, keel_device_addr addr, const std::source_location& where) noexcept;
void forget_allocation(const void* owner, keel_device_addr addr) noexcept;
// The tag of a live block ("" when none).
[[nodiscard]] std::string allocation_tag(const void* owner, keel_device_addr addr);

}  // namespace keel::trace
