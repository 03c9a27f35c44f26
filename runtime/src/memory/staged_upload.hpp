// One host->device copy through pinned staging, chunk by chunk.
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

#include <cstddef>
#include <cstdint>
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
};

}  // namespace keel::memory
