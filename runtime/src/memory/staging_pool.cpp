#include "memory/staging_pool.hpp"

#include "logging.hpp"
#include "memory/peak.hpp"

#include <bit>
#include <vector>

namespace keel::memory {

namespace {

constexpr std::uint64_t kMinClass = 4 * KiB;

}  // namespace

std::uint64_t StagingPool::size_class(std::uint64_t size) noexcept {
    if (size <= kMinClass) return kMinClass;
    // Four classes per power of two: at most 25% waste.
    const std::uint64_t pow = std::bit_floor(size);
    const std::uint64_t step = pow / 4;
    return (size + step - 1) / step * step;
}

StagingPool::StagingPool(DeviceOps& ops, CompletionTracker& tracker, const StagingConfig& config,
                         const BackPressureConfig& limits)
    : ops_(ops),
      tracker_(tracker),
      config_(config),
      max_in_flight_(limits.max_staging_in_flight_bytes) {}

StagingPool::~StagingPool() { trim(); }

staging::CopyPool& StagingPool::copier() {
    std::call_once(copier_once_, [this] {
        staging::CopyPoolConfig pool;
        pool.threads = config_.copy_threads;
        pool.min_parallel_bytes = static_cast<std::size_t>(config_.parallel_min_bytes);
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
    StagingBlock block = take_cached(capacity);
    if (block.ptr != nullptr) {
        reuses_.fetch_add(1, std::memory_order_relaxed);
    } else {
        // No cached block: sweep once (a completed copy may return one)
        // before paying for a pinned allocation.
        tracker_.sweep();
        block = take_cached(capacity);
        if (block.ptr != nullptr) {
            reuses_.fetch_add(1, std::memory_order_relaxed);
        } else {
            auto ptr = ops_.host_alloc(capacity);
            if (!ptr.ok()) return std::move(ptr).error().context("StagingPool::acquire");
            block = StagingBlock{*ptr, capacity};
            host_allocs_.fetch_add(1, std::memory_order_relaxed);
            reserved_bytes_.fetch_add(capacity, std::memory_order_relaxed);
        }
    }
    const std::uint64_t now =
        in_flight_bytes_.fetch_add(block.capacity, std::memory_order_relaxed) + block.capacity;
    update_peak(peak_in_flight_, now);
    return block;
}

StagingBlock StagingPool::take_cached(std::uint64_t capacity) {
    std::lock_guard lock(mu_);
    // The smallest cached block that fits, unless it is more than twice the
    // class (a huge block would be wasted on a small copy).
    auto it = free_.lower_bound(capacity);
    if (it == free_.end() || it->first > 2 * capacity) return {};
    const StagingBlock block{it->second, it->first};
    cached_bytes_ -= it->first;
    free_.erase(it);
    return block;
}

void StagingPool::release(StagingBlock block) noexcept {
    if (block.ptr == nullptr) return;
    in_flight_bytes_.fetch_sub(block.capacity, std::memory_order_relaxed);
    bool keep = false;
    try {
        std::lock_guard lock(mu_);
        if (cached_bytes_ + block.capacity <= config_.max_cached_bytes) {
            free_.emplace(block.capacity, block.ptr);
            cached_bytes_ += block.capacity;
            keep = true;
        }
    } catch (...) {
    }
    if (keep) return;
    // Over the cache bound: back to the plugin (outside the lock).
    auto r = ops_.host_free(block.ptr);
    if (!r.ok()) detail::log_warn("[StagingPool] " + r.error().message());
    host_frees_.fetch_add(1, std::memory_order_relaxed);
    reserved_bytes_.fetch_sub(block.capacity, std::memory_order_relaxed);
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

void StagingPool::trim() noexcept {
    std::multimap<std::uint64_t, void*> blocks;
    {
        std::lock_guard lock(mu_);
        blocks.swap(free_);
        cached_bytes_ = 0;
    }
    for (const auto& [capacity, ptr] : blocks) {
        auto r = ops_.host_free(ptr);
        if (!r.ok()) detail::log_warn("[StagingPool] " + r.error().message());
        host_frees_.fetch_add(1, std::memory_order_relaxed);
        reserved_bytes_.fetch_sub(capacity, std::memory_order_relaxed);
    }
}

StagingStats StagingPool::stats() const {
    StagingStats s;
    {
        std::lock_guard lock(mu_);
        s.cached_bytes = cached_bytes_;
    }
    s.reserved_bytes = reserved_bytes_.load(std::memory_order_relaxed);
    s.in_flight_bytes = in_flight_bytes_.load(std::memory_order_relaxed);
    s.peak_in_flight_bytes = peak_in_flight_.load(std::memory_order_relaxed);
    s.host_allocations = host_allocs_.load(std::memory_order_relaxed);
    s.host_frees = host_frees_.load(std::memory_order_relaxed);
    s.reuses = reuses_.load(std::memory_order_relaxed);
    s.inline_copies = inline_copies_.load(std::memory_order_relaxed);
    s.in_flight_waits = in_flight_waits_.load(std::memory_order_relaxed);
    s.ring_reuses = ring_reuses_.load(std::memory_order_relaxed);
    s.ring_give_ups = ring_give_ups_.load(std::memory_order_relaxed);
    s.direct_copies = direct_copies_.load(std::memory_order_relaxed);
    if (const staging::CopyPool* pool = copier_ready_.load(std::memory_order_acquire)) {
        s.host_copy_threads = pool->threads();
        s.parallel_copies = pool->parallel_copies();
    } else if (config_.copy_threads == 1) {
        s.host_copy_threads = 1;  // the caller alone, no pool
    }
    return s;
}

}  // namespace keel::memory
