// Pinned host blocks for staging copies between host containers and the
// device: keel::staging's PinnedBlocks (the cache the plugins stage pageable
// memory with too) over the plugin's host_alloc, plus what the runtime adds:
// blocks that come back when an event says their copy ran, and the bound on
// staging in flight (back-pressure).
//
// A block is in flight from acquire() until it is released; a block handed
// to release_after() comes back when the event recorded after its copy
// completes. Each block is tracked on its own (per stream, in record order),
// so a stuck stream never keeps other streams' blocks from coming back.
// Sizes are rounded to powers of two so that steady-state traffic finds a
// cached block and makes no pinned allocation.
#pragma once

#include "memory/completion_tracker.hpp"
#include <keel/memory_config.hpp>
#include "memory/device_ops.hpp"
#include <keel/memory_stats.hpp>

#include <keel/staging/copy_pool.hpp>
#include <keel/staging/pinned_blocks.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

namespace keel::memory {

// Host memory for one staged copy. Plain value; ownership is by protocol:
// whoever got it from acquire() must release() or release_after() it once.
struct StagingBlock {
    void* ptr = nullptr;
    std::uint64_t capacity = 0;
};

// Sync: every member may be called from any thread.
class StagingPool {
public:
    StagingPool(DeviceOps& ops, CompletionTracker& tracker, const StagingConfig& config,
                const BackPressureConfig& limits);
    StagingPool(const StagingPool&) = delete;
    StagingPool& operator=(const StagingPool&) = delete;
    StagingPool(StagingPool&&) = delete;
    StagingPool& operator=(StagingPool&&) = delete;
    // Frees the cached blocks. The tracker must have been drained first.
    ~StagingPool() = default;

    // A block of at least `size` bytes for a copy on `stream`. When the bytes
    // in flight would pass max_staging_in_flight_bytes, first waits for the
    // oldest staged copy (this stream's first).
    [[nodiscard]] Result<StagingBlock> acquire(keel_stream stream, std::uint64_t size);
    // Returns a block whose copy completed or was never enqueued.
    void release(StagingBlock block) noexcept;
    // Returns the block once the work enqueued on `stream` so far completes
    // (an event is recorded now). If no event can be recorded, waits for the
    // stream instead, so the block is never reused early.
    [[nodiscard]] Result<void> release_after(keel_stream stream, StagingBlock block);
    // Frees every cached block.
    void trim() noexcept;

    [[nodiscard]] StagingStats stats() const;
    void count_inline_copy() noexcept { inline_copies_.fetch_add(1, std::memory_order_relaxed); }
    void count_ring_reuse() noexcept { ring_reuses_.fetch_add(1, std::memory_order_relaxed); }
    void count_ring_give_up() noexcept { ring_give_ups_.fetch_add(1, std::memory_order_relaxed); }
    void count_direct_copy() noexcept { direct_copies_.fetch_add(1, std::memory_order_relaxed); }
    void count_plugin_staging_wait() noexcept { plugin_staging_waits_.fetch_add(1, std::memory_order_relaxed); }
    // The host threads that copy to and from staging blocks, made at the
    // first call (threads are only started by a large copy).
    [[nodiscard]] staging::CopyPool& copier();
    // Whether a copy (or chunk) of `size` bytes takes the parallel path.
    [[nodiscard]] bool copies_in_parallel(std::uint64_t size) const noexcept;
    [[nodiscard]] const StagingConfig& config() const noexcept { return config_; }

    // The capacity a request of `size` bytes gets.
    [[nodiscard]] std::uint64_t size_class(std::uint64_t size) const noexcept;

private:
    // A block from the cache, or null when none is idle (no allocation).
    [[nodiscard]] Result<StagingBlock> lend(std::uint64_t size);

    DeviceOps& ops_;
    CompletionTracker& tracker_;
    const StagingConfig config_;
    const std::uint64_t max_in_flight_;
    staging::PinnedBlocks blocks_;

    std::atomic<std::uint64_t> in_flight_bytes_{0};
    std::atomic<std::uint64_t> peak_in_flight_{0};
    std::atomic<std::uint64_t> inline_copies_{0};
    std::atomic<std::uint64_t> in_flight_waits_{0};
    std::atomic<std::uint64_t> ring_reuses_{0};
    std::atomic<std::uint64_t> ring_give_ups_{0};
    std::atomic<std::uint64_t> direct_copies_{0};
    std::atomic<std::uint64_t> plugin_staging_waits_{0};

    std::once_flag copier_once_;
    std::unique_ptr<staging::CopyPool> copier_;  // set once under copier_once_
    std::atomic<staging::CopyPool*> copier_ready_{nullptr};
};

}  // namespace keel::memory
