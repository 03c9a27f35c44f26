#include "staging_cache.hpp"

#include <keel/memory_pool.hpp>

namespace keel::comm {

StagingLease::~StagingLease() {
    if (cache_ && !buffer_.empty()) cache_->give_back(std::move(buffer_));
}

Result<StagingLease> StagingCache::acquire(std::uint64_t size) {
    {
        std::unique_lock lock(mutex_);
        if (!keep_bytes_) {
            lock.unlock();
            KEEL_TRY_ASSIGN(const MemoryPool pool, MemoryPool::shared(device_));
            const std::uint64_t keep = pool.config().staging.comm_cached_bytes;
            lock.lock();
            keep_bytes_ = keep;
        }
        auto it = idle_.find(size);
        if (it != idle_.end() && !it->second.empty()) {
            PinnedBuffer buffer = std::move(it->second.back());
            it->second.pop_back();
            idle_bytes_ -= size;
            return StagingLease(shared_from_this(), std::move(buffer));
        }
    }
    KEEL_TRY_ASSIGN(PinnedBuffer buffer, PinnedBuffer::allocate(device_, size));
    return StagingLease(shared_from_this(), std::move(buffer));
}

void StagingCache::give_back(PinnedBuffer buffer) noexcept {
    std::unique_lock lock(mutex_);
    if (idle_bytes_ + buffer.size() <= keep_bytes_.value_or(0)) {
        idle_bytes_ += buffer.size();
        idle_[buffer.size()].push_back(std::move(buffer));
    }
    lock.unlock();
    // `buffer`, when not kept, is freed here, outside the lock.
}

}  // namespace keel::comm
