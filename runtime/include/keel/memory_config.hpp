// MemoryConfig: the tunables of a device's memory machinery (MemoryPool),
// with their defaults. docs/memory.md explains each default; every bound
// here is enforced by making the host wait for the oldest outstanding work,
// never by failing. Plain values; compare with ==.
#pragma once

#include <keel/base/staging_config.hpp>

#include <chrono>
#include <cstdint>

namespace keel {

struct AllocatorConfig {
    // Requests are rounded up to a multiple of max(rounding, device alignment).
    std::uint64_t rounding = 512;
    // Requests up to this size are "small": they are carved from segments of
    // small_segment_size and never share a segment with large requests, so
    // short-lived small buffers do not fragment the large segments.
    std::uint64_t small_size_limit = 1 * MiB;
    std::uint64_t small_segment_size = 2 * MiB;
    // Large requests below half of this get a segment of this size (room to
    // split); bigger ones get their own segment rounded to large_rounding.
    std::uint64_t large_segment_size = 20 * MiB;
    std::uint64_t large_rounding = 2 * MiB;
    // Upper bound on reserved (raw-allocated) bytes; 0 means only the device
    // limits it. Exceeding it behaves exactly as a device out-of-memory.
    std::uint64_t reserved_limit = 0;
    // Reuse a pending block on its stream by enqueuing a device-side wait on
    // the events of its other-stream uses instead of waiting for the host to
    // see them complete.
    bool wait_at_reuse = false;
    // Front cache: a freed block is parked, unmerged, in a LIFO of its exact
    // size (up to this many per size; per stream at most exact_cache_bytes of
    // small blocks and exact_cache_large_bytes of large ones, in up to 8
    // sizes) so that the common free-then-allocate-the-same-size pattern
    // touches no tree. Parked blocks are merged back before any raw
    // allocation, so they never cause one. 0 disables it.
    std::uint32_t exact_cache_depth = 8;
    std::uint64_t exact_cache_bytes = 8 * MiB;
    std::uint64_t exact_cache_large_bytes = 64 * MiB;
    // While something is outstanding, a thread sweeps completed work on its
    // cached operations: on every one while sweeps release something, backing
    // off exponentially to one in this many while they find nothing.
    std::uint32_t sweep_every = 64;
    // Checked memory (docs/memory.md, "Checked mode"): guard bytes past every
    // block, freed blocks poisoned and quarantined, every copy, memset and
    // kernel buffer checked against the live range of its block, and the
    // device's checker told what the cache reuses. KEEL_CHECK=1 turns it on
    // for every instance.
    bool checked = false;
    // Freed blocks reused only after this many bytes of later frees (checked mode).
    std::uint64_t quarantine_bytes = 64 * MiB;
    // false: every buffer is its own plugin allocation, freed (after its
    // stream and recorded uses) when the buffer is, so that a device's own
    // tools see each one. KEEL_NO_CACHING=1 turns caching off everywhere.
    bool caching = true;

    friend bool operator==(const AllocatorConfig&, const AllocatorConfig&) = default;
};

// StagingConfig (<keel/base/staging_config.hpp>): every staging setting, the
// same type the plugins take.

struct BackPressureConfig {
    // Staging bytes whose copies have not completed. Past it, the host waits
    // for the oldest staging copy (its own stream's first).
    std::uint64_t max_staging_in_flight_bytes = 256 * MiB;
    // Bytes freed but still waiting for other streams' uses. 0 = an eighth of
    // the device's memory (64 MiB when the device does not say).
    std::uint64_t max_pending_free_bytes = 0;
    // Number of such pending frees.
    std::uint32_t max_pending_free_count = 4096;
    // Tracked operations (copies, holds, fences, pending frees) outstanding
    // per stream; each holds one event. Past it, the host waits until half
    // of it is left (so it waits once per half a window, not per operation).
    // 0 = unbounded.
    std::uint32_t max_queued_per_stream = 1024;

    friend bool operator==(const BackPressureConfig&, const BackPressureConfig&) = default;
};

struct MemoryConfig {
    AllocatorConfig allocator;
    StagingConfig staging;
    BackPressureConfig limits;
    // A background thread sweeps completed work while something is
    // outstanding, so memory and held objects come back even when nothing
    // calls into the allocator: this period after work turns up, then half
    // as often after each sweep while work stays outstanding, down to one
    // sweep per 16 periods. Zero disables the thread.
    std::chrono::microseconds reclaim_interval{1000};

    friend bool operator==(const MemoryConfig&, const MemoryConfig&) = default;
};

}  // namespace keel
