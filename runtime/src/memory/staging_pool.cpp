#include "memory/staging_pool.hpp"

#include "logging.hpp"
#include "memory/peak.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>

namespace keel::memory {

namespace {

// The plugin's host_alloc/host_free (or ordinary memory where it has none),
// as keel::staging allocates blocks. Blocks come back on runtime threads
// only (the caller's or the sweeper), so freeing them there is fine.
class PluginHostMemory final : public staging::PinnedMemory {
public:
    explicit PluginHostMemory(DeviceOps& ops) noexcept : ops_(ops) {}
    Result<void*> allocate(std::size_t bytes) override { return ops_.host_alloc(bytes); }
    void free(void* block) noexcept override {
        auto r = ops_.host_free(block);
        if (!r.ok()) detail::log_warn("[StagingPool] " + r.error().message());
    }

private:
    DeviceOps& ops_;
};

staging::PinnedBlocksConfig blocks_config(const StagingConfig& config) {
    staging::PinnedBlocksConfig blocks;
    blocks.smallest = kSmallestStagingBlock;
    blocks.largest = static_cast<std::size_t>(std::max<std::uint64_t>(config.chunk_bytes, kSmallestStagingBlock));
    blocks.capacity = UINT64_MAX;  // bounded by back-pressure and host_alloc instead
    blocks.max_idle_bytes = config.max_cached_bytes;
    return blocks;
}

}  // namespace

std::uint64_t StagingPool::size_class(std::uint64_t size) const noexcept {
    return blocks_.block_size(static_cast<std::size_t>(size));
}

StagingPool::StagingPool(DeviceOps& ops, CompletionTracker& tracker, const StagingConfig& config,
                         const BackPressureConfig& limits)
    : ops_(ops),
      tracker_(tracker),
      config_(config),
      max_in_flight_(limits.max_staging_in_flight_bytes),
      blocks_(std::make_unique<PluginHostMemory>(ops), blocks_config(config)) {}

staging::CopyPool& StagingPool::copier() {
    std::call_once(copier_once_, [this] {
        staging::CopyPoolConfig pool;
        pool.threads = config_.copy_threads;
        pool.min_parallel_bytes = static_cast<std::size_t>(config_.parallel_min_bytes);
        pool.min_slice_bytes = static_cast<std::size_t>(config_.copy_slice_min_bytes);
        copier_ = std::make_unique<staging::CopyPool>(pool);
        copier_ready_.store(copier_.get(), std::memory_order_release);
    });
    return *copier_;
}

bool StagingPool::copies_in_parallel(std::uint64_t size) const noexcept {
    return config_.copy_threads != 1 && size >= config_.parallel_min_bytes;
}

Result<StagingBlock> StagingPool::acquire(keel_stream stream, std::uint64_t size) {
    const std::uint64_t capacity = size_class(size);
    // Back-pressure: the host is too far ahead of the device.
    while (max_in_flight_ != 0 &&
           in_flight_bytes_.load(std::memory_order_relaxed) + capacity > max_in_flight_) {
        tracker_.sweep();
        if (in_flight_bytes_.load(std::memory_order_relaxed) + capacity <= max_in_flight_) break;
        // Only staging still held by callers (not yet enqueued or tracked)
        // is in flight: nothing to wait for, go past the bound.
        if (!tracker_.wait_oldest(WorkKind::staging, stream)) break;
        in_flight_waits_.fetch_add(1, std::memory_order_relaxed);
    }
    const auto n = static_cast<std::size_t>(size);
    std::optional<staging::PinnedBlock> block = blocks_.take_idle(n);
    if (!block) {
        // No cached block: sweep once (a completed copy may return one)
        // before paying for a pinned allocation.
        tracker_.sweep();
        block = blocks_.take_idle(n);
    }
    if (!block) {
        auto lent = blocks_.lend(n);
        if (!lent.ok()) return std::move(lent).error().context("StagingPool::acquire");
        if (!*lent) return Error(KEEL_STATUS_OUT_OF_MEMORY, "[StagingPool::acquire] no staging memory");
        block = **lent;
    }
    const std::uint64_t now = in_flight_bytes_.fetch_add(block->size, std::memory_order_relaxed) + block->size;
    update_peak(peak_in_flight_, now);
    return StagingBlock{block->data, block->size};
}

void StagingPool::release(StagingBlock block) noexcept {
    if (block.ptr == nullptr) return;
    in_flight_bytes_.fetch_sub(block.capacity, std::memory_order_relaxed);
    blocks_.give_back(staging::PinnedBlock{block.ptr, static_cast<std::size_t>(block.capacity)});
}

Result<void> StagingPool::release_after(keel_stream stream, StagingBlock block) {
    auto tracked = tracker_.record_and_track(stream, WorkKind::staging,
                                             HostFunc([this, block] { release(block); }));
    if (tracked.ok()) return ok();
    // No event: the copy may still read the block, so wait for the stream.
    // (An error here means the stream failed and its copy will not run.)
    auto synced = ops_.stream_synchronize(stream);
    if (!synced.ok()) detail::log_debug("[StagingPool] " + synced.error().message());
    release(block);
    return std::move(tracked).error().context("StagingPool::release_after");
}

void StagingPool::trim() noexcept { blocks_.trim(); }

StagingStats StagingPool::stats() const {
    StagingStats s;
    const staging::PinnedBlocksStats blocks = blocks_.stats();
    s.cached_bytes = blocks.idle_bytes;
    s.reserved_bytes = blocks.held_bytes;
    s.in_flight_bytes = in_flight_bytes_.load(std::memory_order_relaxed);
    s.peak_in_flight_bytes = peak_in_flight_.load(std::memory_order_relaxed);
    s.host_allocations = blocks.allocations;
    s.host_frees = blocks.frees;
    s.reuses = blocks.reuses;
    s.inline_copies = inline_copies_.load(std::memory_order_relaxed);
    s.in_flight_waits = in_flight_waits_.load(std::memory_order_relaxed);
    s.ring_reuses = ring_reuses_.load(std::memory_order_relaxed);
    s.ring_give_ups = ring_give_ups_.load(std::memory_order_relaxed);
    s.direct_copies = direct_copies_.load(std::memory_order_relaxed);
    s.plugin_staging_waits = plugin_staging_waits_.load(std::memory_order_relaxed);
    if (const staging::CopyPool* pool = copier_ready_.load(std::memory_order_acquire)) {
        s.host_copy_threads = pool->threads();
        s.parallel_copies = pool->parallel_copies();
    } else if (config_.copy_threads == 1) {
        s.host_copy_threads = 1;  // the caller alone, no pool
    }
    return s;
}

}  // namespace keel::memory
