// The caching allocator when streams close: a closed stream's pools give
// their memory to the leftovers pool, which every stream reads before it
// reserves a new segment, and free segments go back to the plugin.
#include "memory/block_allocator.hpp"

#include "host_func_guard.hpp"
#include "memory/block_pool.hpp"

namespace keel::memory {

void BlockAllocator::stream_closed(keel_stream stream) noexcept {
    std::vector<StreamPool*> pools;
    try {
        std::shared_lock lock(pools_mu_);
        auto it = pools_.find(stream);
        if (it == pools_.end()) return;
        for (const auto& pool : it->second->shard)
            if (pool) pools.push_back(pool.get());
    } catch (...) {
        return;  // out of host memory: the pools keep their memory until the next close
    }
    for (StreamPool* pool : pools) {
        {
            std::lock_guard lock(pool->mu);
            pool->closed = true;
        }
        flush_credit(*pool);
        release_closed(*pool);
    }
}

void BlockAllocator::move_to_leftovers(StreamPool& pool) noexcept {
    if (!caching_ || &pool == leftovers_.get()) return;
    // The plugin may give a destroyed handle to a new stream (even before
    // stream_closed runs): while a stream is open on the handle, the pool's
    // free blocks may have its work queued on them, and they stay its own.
    // One that opens after this check allocates before it can free, and an
    // allocation clears `closed` (checked under the pool's lock below).
    if (keep_open(pool.stream, pool.opened_as, Match::or_newer)) return;
    std::shared_ptr<void> last;  // dropped after the locks (never the last: the leftovers hold one)
    std::lock_guard moving(move_mu_);
    std::lock_guard from_lock(pool.mu);
    if (!pool.closed) return;  // a newer stream on the handle allocated from it
    unpark_all(pool);
    std::lock_guard to_lock(leftovers_->mu);
    std::uint64_t out = 0;
    for (auto it = pool.segments.begin(); it != pool.segments.end();) {
        Segment& segment = *it++;
        if (movable(segment)) out += move_segment(pool, *leftovers_, segment);
    }
    move_owner_shares(pool, *leftovers_, out, last);
    // An empty pool keeps no exact-size index (about 18 KiB per pool with
    // the defaults): the map keeps a closed handle's pools for a stream that
    // may get the handle again, and processes make streams by the thousand.
    if (pool.segments.empty()) {
        std::vector<Block*>().swap(pool.parked_head);
        std::vector<std::uint8_t>().swap(pool.parked_count);
    }
}

void BlockAllocator::release_closed(StreamPool& pool) noexcept {
    // Moving calls no plugin: it is done even inside a host function.
    move_to_leftovers(pool);
    // No plugin call from a host function: free segments stay cached then
    // (the leftovers' go back at the next close or free of a leftover).
    if (detail::in_host_func()) return;
    std::vector<ReleasedSegment> segments;
    std::vector<ReleasedSegment> leftover;
    try {
        {
            std::lock_guard lock(pool.mu);
            collect_free_segments(pool, segments);
        }
        if (&pool != leftovers_.get()) {
            std::lock_guard lock(leftovers_->mu);
            collect_free_segments(*leftovers_, leftover);
        }
    } catch (...) {
        // Out of host memory: what was not listed stays cached.
    }
    // What stayed in the pool (a newer stream on the handle took it over
    // meanwhile) goes back after that stream's work, as in release_cached;
    // no stream's work uses the leftovers.
    if (!segments.empty()) wait_for_stream(pool);
    free_segments(segments, nullptr);
    free_segments(leftover, nullptr);
}

}  // namespace keel::memory
