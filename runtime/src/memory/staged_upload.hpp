// One host->device copy through pinned staging, chunk by chunk.
//
// The host copy of each chunk into its staging block is split among the
// staging pool's copy threads (CopyPool), and runs `stage_ahead` chunks ahead
// of the device copies: while the device reads chunk k, the threads fill
// chunks k+1..k+stage_ahead, and the calling thread enqueues chunk k+1's
// device copy as soon as its slices are in. One thread of memcpy from
// pageable memory is far slower than a host-to-device link on server hosts;
// several are not. Chunks below parallel_min_bytes are copied by the caller
// alone, as before.
//
// When no staging memory can be had (pinned memory exhausted), the copy
// waits for the stream's staged copies to return their blocks and tries
// again; failing that it copies straight from the source and waits for the
// stream before returning (slower, but it succeeds).
//
// The chunks of a copy cycle through a small ring of staging blocks: once
// `ring_chunks` are in flight, the next chunk reuses the block of the oldest
// as soon as the device has read it. The block the host fills is then still
// in the last-level cache when the device reads it, so the staged bytes never
// travel to DRAM and back. Where the device copy is a DMA over a link slower
// than host memory this changes little; where it is a memcpy (the CPU
// plugin, integrated GPUs) it halves the memory traffic of staging.
//
// Waiting for the oldest chunk only pays while the device is working on this
// copy. When the stream was idle as the copy began, nothing else runs ahead
// of its chunks (unless another thread enqueues on the same stream while the
// copy runs; then the wait includes that work) and the wait blocks. Otherwise the first wait polls for at
// most `ring_wait`; if the stream is still busy with earlier work, the copy
// stops reusing and takes fresh blocks from the pool, so a busy stream costs
// the host at most one `ring_wait` per copy.
#pragma once

#include "memory/memory_core.hpp"

#include <keel/staging/copy_pool.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

namespace keel::memory {

// Not Send, not Sync: lives on the calling thread for one copy.
class StagedUpload {
public:
    StagedUpload(MemoryCore& core, keel_stream stream) noexcept;
    StagedUpload(const StagedUpload&) = delete;
    StagedUpload& operator=(const StagedUpload&) = delete;
    // Hands the chunks still in flight to the tracker, which returns their
    // blocks when the device has read them.
    ~StagedUpload();

    // Copies `src` to [dst, dst + src.size()); `src` is no longer read when
    // this returns.
    [[nodiscard]] Result<void> run(keel_device_addr dst, std::span<const std::byte> src);

private:
    struct Chunk {
        StagingBlock block;
        keel_event event = nullptr;
        std::uint64_t seq = 0;
    };
    // A chunk whose host copy the pool is doing; its device copy is next.
    struct Staging {
        Chunk chunk;
        keel_device_addr dst = 0;
        std::uint64_t size = 0;
        std::unique_ptr<staging::CopyBatch> batch;  // waits for its slices when destroyed
    };
    // Waits for the oldest staging chunk's host copy and enqueues its device
    // copy.
    [[nodiscard]] Result<void> enqueue_oldest();
    // Waits for every staging chunk's host copy and returns its block and
    // event unused (an error path: the source is not read after it).
    void drop_staging() noexcept;
    // Pinned memory ran out: send what is staged, wait for the stream so that
    // its staged copies return their blocks. Error if the stream failed.
    [[nodiscard]] Result<void> wait_for_staging();
    // The last resort: [offset, end) straight from the source, then wait for
    // the stream so that the source is not read after return.
    [[nodiscard]] Result<void> copy_direct(keel_device_addr dst, std::span<const std::byte> rest);
    // A block and an event for the next chunk: the oldest chunk's once the
    // device has read it, else fresh ones.
    [[nodiscard]] Result<Chunk> next_chunk(std::uint64_t size);
    // Polls `event` for at most ring_wait; false if it did not complete.
    [[nodiscard]] bool completes_soon(keel_event event);
    void retire_in_flight() noexcept;

    MemoryCore& core_;
    keel_stream stream_;
    bool recycle_;
    // Set once the device completed a chunk of this copy: from then on it
    // works through this copy's chunks, and waiting for one is bounded.
    bool device_on_this_copy_ = false;
    std::vector<Chunk> in_flight_;  // oldest first
    std::size_t oldest_ = 0;        // in_flight_[oldest_..] are in flight
    staging::CopyPool* pool_ = nullptr;  // null: the caller copies alone
    std::deque<Staging> staging_;        // oldest first
};

}  // namespace keel::memory
