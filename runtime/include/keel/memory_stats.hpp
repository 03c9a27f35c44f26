// Statistics and snapshots of a device's memory machinery (MemoryPool):
// plain values, safe to copy and send anywhere.
#pragma once

#include <keel/export.hpp>
#include <keel/keel.h>

#include <cstdint>
#include <string>
#include <vector>

namespace keel {

struct KEEL_API AllocatorStats {
    // Bytes of blocks handed out and not yet freed (rounded sizes), and the
    // sizes callers asked for.
    std::uint64_t allocated_bytes = 0;
    std::uint64_t requested_bytes = 0;
    std::uint64_t allocated_count = 0;
    // Bytes obtained from the plugin and not yet returned.
    std::uint64_t reserved_bytes = 0;
    std::uint64_t segment_count = 0;
    // Free blocks ready for reuse (reserved - allocated - pending).
    std::uint64_t cached_bytes = 0;
    // Freed blocks still waiting for uses recorded on other streams.
    std::uint64_t pending_free_bytes = 0;
    std::uint64_t pending_free_count = 0;
    // Peaks since creation or reset_peaks(). in_use = allocated + pending:
    // the memory that is not reusable.
    std::uint64_t peak_allocated_bytes = 0;
    std::uint64_t peak_reserved_bytes = 0;
    std::uint64_t peak_pending_free_bytes = 0;
    std::uint64_t peak_in_use_bytes = 0;
    // Counters since creation.
    std::uint64_t allocations = 0;        // successful allocate() calls
    std::uint64_t cache_hits = 0;         // served without a raw allocation
    std::uint64_t raw_allocations = 0;    // plugin device_alloc calls that succeeded
    std::uint64_t raw_frees = 0;          // plugin device_free calls
    std::uint64_t oom_retries = 0;        // times the out-of-memory ladder ran
    std::uint64_t ooms = 0;               // allocations that failed after the ladder
    std::uint64_t reuse_waits = 0;        // device-side waits of wait-at-reuse mode
    std::uint64_t pending_free_waits = 0; // host waits forced by pending-free bounds

    // One line: "allocated 3.0 MiB (2 blocks), reserved 20.0 MiB in 1 segment, ..."
    [[nodiscard]] std::string to_string() const;
};

enum class BlockState : std::uint8_t {
    free,       // cached, reusable by its stream
    allocated,  // owned by a caller
    pending,    // freed, waiting for other streams' uses to complete
};
[[nodiscard]] KEEL_API const char* block_state_name(BlockState state) noexcept;

struct BlockSnapshot {
    keel_device_addr addr = 0;
    std::uint64_t size = 0;
    std::uint64_t requested = 0;  // 0 unless allocated
    BlockState state = BlockState::free;
    // With the memory history on (<keel/trace.hpp>): the allocation's tag
    // or site; empty otherwise and for blocks not allocated.
    std::string tag;
};

struct SegmentSnapshot {
    keel_device_addr addr = 0;
    std::uint64_t size = 0;
    keel_stream stream = nullptr;  // the stream whose pool owns it (handle value only); null: left by closed streams
    std::uint64_t stream_id = 0;   // that stream's id in traces ("<device> stream <id>"); 0: none open
    bool small = false;            // from the small-request pool
    std::vector<BlockSnapshot> blocks;  // in address order, covering the segment
};

// Every segment with its blocks, for debugging fragmentation.
struct KEEL_API MemorySnapshot {
    std::string device;  // "cpu:0" (empty for a fake device)
    std::vector<SegmentSnapshot> segments;
    [[nodiscard]] std::string to_string() const;
    // {"device": ..., "segments": [{"addr", "size", "stream", "pool",
    //   "blocks": [{"addr", "size", "requested", "state", "tag"}]}]}
    // (addresses as hex strings; "stream" null for leftovers of closed streams).
    [[nodiscard]] std::string to_json() const;
};

struct KEEL_API StagingStats {
    std::uint64_t reserved_bytes = 0;     // staging memory obtained from the plugin
    std::uint64_t cached_bytes = 0;       // free staging blocks
    std::uint64_t in_flight_bytes = 0;    // blocks whose copies have not completed
    std::uint64_t peak_in_flight_bytes = 0;
    std::uint64_t host_allocations = 0;   // plugin host_alloc (or new) calls
    std::uint64_t host_frees = 0;
    std::uint64_t reuses = 0;             // blocks served from the cache
    std::uint64_t inline_copies = 0;      // copies through memcpy_h2d_inline
    std::uint64_t in_flight_waits = 0;    // host waits forced by the in-flight bound
    std::uint64_t ring_reuses = 0;        // chunks that reused their copy's oldest block
    std::uint64_t ring_give_ups = 0;      // copies that stopped reusing (stream busy elsewhere)
    std::uint64_t host_copy_threads = 0;  // threads copying into staging (0: pool not made yet)
    std::uint64_t parallel_copies = 0;    // chunks copied by several host threads
    std::uint64_t direct_copies = 0;      // uploads that found no staging memory and went direct
    // Copies the plugin refused because its own staging of pageable memory
    // was all in use, retried after waiting for their stream.
    std::uint64_t plugin_staging_waits = 0;
    [[nodiscard]] std::string to_string() const;
};

// What the plugin's staging of pageable host memory did on one device: the
// copies the runtime hands it straight (a vector moved into a copy, every
// device->host copy into host memory not from PinnedBuffer). Read from the
// plugin with Device::pageable_staging_stats().
struct KEEL_API PageableStagingStats {
    std::uint64_t copies = 0;              // copies staged through pinned blocks
    std::uint64_t short_copies = 0;        // of those, copies with fewer blocks than wanted
    std::uint64_t refused_copies = 0;      // copies that found no block (slower path or error)
    std::uint64_t pinned_allocations = 0;  // pinned blocks the plugin allocated
    std::uint64_t pinned_frees = 0;
    std::uint64_t block_reuses = 0;        // blocks served from its cache
    std::uint64_t held_bytes = 0;          // pinned memory held now, lent or idle
    std::uint64_t lent_bytes = 0;          // of that, lent to copies in flight
    std::uint64_t capacity_bytes = 0;      // the bound on held_bytes
    std::uint64_t host_copy_threads = 0;   // 0: no copy staged yet
    [[nodiscard]] std::string to_string() const;
};

struct KEEL_API TrackerStats {
    std::uint64_t outstanding = 0;        // tracked operations not yet swept
    std::uint64_t peak_outstanding = 0;   // each stream's most at once, summed (>= the total's peak)
    std::uint64_t swept = 0;              // operations released by sweeps
    std::uint64_t queue_waits = 0;        // host waits forced by max_queued_per_stream
    std::uint64_t events_created = 0;     // events the pool ever created
    [[nodiscard]] std::string to_string() const;
};

}  // namespace keel
