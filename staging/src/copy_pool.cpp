#include <keel/staging/copy_pool.hpp>

#include <algorithm>
#include <cstring>

namespace keel::staging {

namespace {

unsigned resolve_threads(unsigned wanted) {
    if (wanted != 0) return wanted;
    return std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
}

}  // namespace

CopyBatch::~CopyBatch() {
    if (pool_ != nullptr) pool_->wait(*this);
}

CopyPool::CopyPool(const CopyPoolConfig& config)
    : config_(config), threads_(resolve_threads(config.threads)) {
    workers_.reserve(threads_ - 1);
    for (unsigned i = 1; i < threads_; ++i) workers_.emplace_back([this] { work(); });
}

CopyPool::~CopyPool() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : workers_) t.join();
}

void CopyPool::copy_async(void* dst, const void* src, std::size_t n, CopyBatch& batch) {
    if (n == 0) return;
    const std::size_t slice_min = std::max<std::size_t>(config_.min_slice_bytes, 4096);
    if (threads_ == 1 || n < config_.min_parallel_bytes || n < 2 * slice_min) {
        std::memcpy(dst, src, n);
        return;
    }
    // One slice per thread, each at least slice_min, cut on 4 KiB bounds so
    // that no two threads write one page.
    const std::size_t pieces = std::min<std::size_t>(threads_, n / slice_min);
    const std::size_t slice = (n / pieces + 4095) & ~std::size_t{4095};
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    std::size_t queued = 0;
    {
        std::lock_guard lock(mu_);
        batch.pool_ = this;
        for (std::size_t off = 0; off < n; off += slice) {
            queue_.push_back(Slice{d + off, s + off, std::min(slice, n - off), &batch});
            ++queued;
        }
        batch.remaining_ += queued;
        ++parallel_copies_;
    }
    if (queued > 1) work_cv_.notify_all();
    else work_cv_.notify_one();
}

void CopyPool::wait(CopyBatch& batch) {
    std::unique_lock lock(mu_);
    while (batch.remaining_ != 0) {
        if (!queue_.empty()) {
            const Slice s = queue_.front();
            queue_.pop_front();
            run(s, lock);
            continue;
        }
        done_cv_.wait(lock);
    }
}

void CopyPool::copy(void* dst, const void* src, std::size_t n) {
    CopyBatch batch;
    copy_async(dst, src, n, batch);
    wait(batch);
}

std::uint64_t CopyPool::parallel_copies() const {
    std::lock_guard lock(mu_);
    return parallel_copies_;
}

void CopyPool::work() {
    std::unique_lock lock(mu_);
    for (;;) {
        work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and nothing left to copy
        const Slice s = queue_.front();
        queue_.pop_front();
        run(s, lock);
    }
}

void CopyPool::run(Slice s, std::unique_lock<std::mutex>& lock) {
    lock.unlock();
    std::memcpy(s.dst, s.src, s.n);
    lock.lock();
    if (--s.batch->remaining_ == 0) done_cv_.notify_all();
}

}  // namespace keel::staging
