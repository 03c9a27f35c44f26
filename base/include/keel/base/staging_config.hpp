// StagingConfig: every setting of keel's staging of host memory through
// pinned blocks, in one type for every path that stages:
//   - Stream::copy from a borrowed host container (the runtime reads it
//     before the call returns): MemoryConfig::staging of the device's
//     MemoryPool;
//   - memcpy_h2d/memcpy_d2h of pageable memory on a device that copies only
//     pinned memory (the copy reads or writes the host memory when the stream
//     runs it): the `pageable` fields, used by keel's CUDA and Level Zero
//     plugins and by the runtime for a plugin that declares
//     KEEL_DEVICE_CAP_PINNED_COPIES_ONLY;
//   - a Communicator's generic path, which stages device memory for Gloo:
//     `comm_cached_bytes`.
// The environment overrides it field by field in one place,
// keel::staging::with_environment (keel::staging), which every path calls.
// Header-only in keel::base because the plugins, which never include a
// runtime header, take the same type. Plain value; compare with ==.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace keel {

inline constexpr std::uint64_t KiB = 1024;
inline constexpr std::uint64_t MiB = 1024 * KiB;
inline constexpr std::uint64_t GiB = 1024 * MiB;

// The smallest pinned block any staging path lends (a page).
inline constexpr std::size_t kSmallestStagingBlock = 4 * 1024;

// Execution-time staging of pageable memory (keel::staging::PageableStaging).
struct PageableStagingSettings {
    // Device copies per chunk cost a host step (a callback round trip, tens
    // of µs on CUDA); 4 MiB at 50 GB/s is 80 µs. KEEL_PAGEABLE_CHUNK_KIB.
    std::uint64_t chunk_bytes = 4 * MiB;
    // Blocks lent to one copy: 2 overlap one host copy with one device copy;
    // 3 let the host copies run a chunk further ahead. KEEL_PAGEABLE_BLOCKS.
    std::uint32_t blocks_per_copy = 3;
    // Pinned bytes held by all copies of one device together, idle blocks
    // included; past it a copy is refused (OUT_OF_MEMORY).
    // KEEL_PAGEABLE_STAGING_MIB.
    std::uint64_t capacity = 256 * MiB;
    // Chunks below this are copied by the step's thread alone.
    std::uint64_t parallel_min_bytes = 256 * KiB;

    friend bool operator==(const PageableStagingSettings&, const PageableStagingSettings&) = default;
};

struct StagingConfig {
    // Host->device copies larger than this are split into chunks of this size
    // so that filling the next chunk overlaps with the device copying the
    // previous one, and so that staging use per copy stays bounded.
    std::uint64_t chunk_bytes = 1 * MiB;
    // Past this many chunks in flight, a copy reuses the staging block of its
    // oldest chunk once the device has read it, so its staging stays in the
    // last-level cache (ring_chunks * chunk_bytes must fit there). It waits
    // at most ring_wait for that chunk; a stream busy with earlier work makes
    // it take fresh blocks instead. 0 = never reuse within a copy.
    std::uint32_t ring_chunks = 4;
    std::chrono::microseconds ring_wait{1000};
    // Free staging blocks kept for reuse; more than this is returned to the
    // plugin when a block comes back.
    std::uint64_t max_cached_bytes = 256 * MiB;
    // Use the plugin's memcpy_h2d_inline for copies up to KEEL_INLINE_COPY_MAX.
    bool inline_small_copies = true;
    // Host threads that copy between pageable memory and pinned blocks, the
    // waiting thread included, for both Stream::copy and the pageable
    // staging below (each makes its pool at its first large copy; the
    // workers block while idle). 0: one per hardware thread, at most 16.
    // 1: the caller copies alone. KEEL_PAGEABLE_THREADS.
    std::uint32_t copy_threads = 0;
    // Host->device: chunks the threads fill ahead of the one whose device
    // copy is enqueued next, so that the host copy of later chunks overlaps
    // the device copy of earlier ones.
    std::uint32_t stage_ahead = 2;
    // Copies (or chunks) below this are copied by the calling thread alone.
    std::uint64_t parallel_min_bytes = 1 * MiB;
    // A parallel copy is cut into slices of at least this (handing a slice
    // to a thread costs a few µs), for both kinds of staging.
    std::uint64_t copy_slice_min_bytes = 64 * KiB;
    // memcpy_h2d/memcpy_d2h of pageable memory on a device that copies only
    // pinned memory.
    PageableStagingSettings pageable;
    // Idle pinned bytes a Communicator's generic path keeps for reuse (its
    // blocks hold a whole operation's data; a pinned allocation costs far
    // more than the copy it serves).
    std::uint64_t comm_cached_bytes = 1 * GiB;

    friend bool operator==(const StagingConfig&, const StagingConfig&) = default;
};

}  // namespace keel
