// CopyPool: host threads that copy memory in parallel slices, for staging
// copies between pageable host memory and pinned blocks.
//
// One thread of memcpy from pageable memory moves 7-11 GB/s on a server
// host, a fraction of a PCIe 5 link or of the host's own memory bandwidth;
// 8-16 threads reach 38-48 GB/s. A copy is split into slices that the
// pool's workers and the waiting thread copy together. Workers block on a
// condition variable while there is nothing to copy (no spinning), and
// copies below `min_parallel_bytes` are done inline on the calling thread:
// waking a worker costs more than copying them.
//
// Thread-safety: CopyPool is Sync (every member may be called from any
// thread). A CopyBatch is used by one thread (the one that waits on it)
// while the pool's threads complete its slices.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace keel::staging {

struct CopyPoolConfig {
    // Threads that copy, the waiting caller included (so threads - 1
    // workers). 0: one per hardware thread, at most 16 (on the 16-core H100
    // host, pageable->pinned memcpy saturates at 12-16 threads).
    unsigned threads = 0;
    // Copies below this are done inline by the caller.
    std::size_t min_parallel_bytes = 256 * 1024;
    // Slices are never smaller than this (the hand-off costs a few µs).
    std::size_t min_slice_bytes = 64 * 1024;
};

class CopyPool;

// The slices of one or more copies that a thread waits for together.
// Not movable: the pool's threads refer to it until its last slice is done.
// Destroying a batch with slices outstanding waits for them first.
class CopyBatch {
public:
    CopyBatch() noexcept = default;
    CopyBatch(const CopyBatch&) = delete;
    CopyBatch& operator=(const CopyBatch&) = delete;
    ~CopyBatch();

private:
    friend class CopyPool;
    CopyPool* pool_ = nullptr;   // set by the first copy handed to a pool
    std::size_t remaining_ = 0;  // slices not yet copied; guarded by the pool's mutex
};

class CopyPool {
public:
    explicit CopyPool(const CopyPoolConfig& config = {});
    CopyPool(const CopyPool&) = delete;
    CopyPool& operator=(const CopyPool&) = delete;
    // Waits for queued slices, then joins the workers.
    ~CopyPool();

    // Threads that copy, the caller included (1: everything inline).
    [[nodiscard]] unsigned threads() const noexcept { return threads_; }
    [[nodiscard]] const CopyPoolConfig& config() const noexcept { return config_; }

    // Starts copying `n` bytes from `src` to `dst` (which must not overlap)
    // as part of `batch`; small copies are done before this returns. Both
    // ranges must stay valid until wait(batch) returns. Every batch must be
    // handed to one pool only.
    void copy_async(void* dst, const void* src, std::size_t n, CopyBatch& batch);
    // Blocks until every slice of `batch` was copied, copying queued slices
    // (of any batch) on this thread meanwhile.
    void wait(CopyBatch& batch);
    // copy_async + wait.
    void copy(void* dst, const void* src, std::size_t n);

    // Copies that took the parallel path since the pool was made.
    [[nodiscard]] std::uint64_t parallel_copies() const;

private:
    struct Slice {
        void* dst;
        const void* src;
        std::size_t n;
        CopyBatch* batch;
    };
    void work();
    // Copies `s` with the mutex released, then marks it done. `lock` is held
    // on entry and on return.
    void run(Slice s, std::unique_lock<std::mutex>& lock);

    const CopyPoolConfig config_;
    const unsigned threads_;
    mutable std::mutex mu_;
    std::condition_variable work_cv_;  // slices queued, or stopping
    std::condition_variable done_cv_;  // a batch completed
    std::deque<Slice> queue_;          // guarded by mu_
    bool stop_ = false;                // guarded by mu_
    std::uint64_t parallel_copies_ = 0;  // guarded by mu_
    std::vector<std::thread> workers_;
};

}  // namespace keel::staging
