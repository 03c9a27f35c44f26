// A stream for testing PageableStaging without a device: a thread runs the
// enqueued steps and device copies in order against a byte array standing in
// for device memory. It can start held (so tests can change host memory
// between enqueue and execution), fail from a given operation on (later
// steps see stream_ok == false, later device copies are skipped), and refuse
// the n-th enqueue. Pinned memory is ordinary heap memory that counts what
// is live.
#pragma once

#include <keel/staging/pageable_staging.hpp>

#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace keel::staging::testing {

class HeapPinned final : public PinnedMemory {
public:
    struct Counts {
        std::mutex mu;
        std::set<void*> live;  // guarded by mu
    };
    explicit HeapPinned(std::shared_ptr<Counts> counts) : counts_(std::move(counts)) {}
    Result<void*> allocate(std::size_t bytes) override {
        const std::size_t rounded = (bytes + 4095) & ~std::size_t{4095};
        void* p = std::aligned_alloc(4096, rounded);
        if (p == nullptr) return Error(KEEL_STATUS_OUT_OF_MEMORY, "aligned_alloc");
        std::memset(p, 0, rounded);  // no stale heap bytes for tests to mistake for data
        std::lock_guard lock(counts_->mu);
        counts_->live.insert(p);
        return p;
    }
    void free(void* block) noexcept override {
        {
            std::lock_guard lock(counts_->mu);
            counts_->live.erase(block);
        }
        std::free(block);
    }

private:
    std::shared_ptr<Counts> counts_;
};

class FakeStream {
public:
    explicit FakeStream(std::size_t device_bytes, bool held = false)
        : device_(device_bytes, 0), held_(held), thread_([this] { run(); }) {}
    FakeStream(const FakeStream&) = delete;
    FakeStream& operator=(const FakeStream&) = delete;
    ~FakeStream() {
        release();
        {
            std::lock_guard lock(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }

    // Operations from the n-th (0-based) on fail or are skipped.
    void fail_from(std::uint64_t n) {
        std::lock_guard lock(mu_);
        fail_from_ = n;
    }
    // The n-th enqueue (0-based) is refused.
    void refuse_enqueue(std::uint64_t n) {
        std::lock_guard lock(mu_);
        refuse_ = n;
    }
    void release() {
        {
            std::lock_guard lock(mu_);
            held_ = false;
        }
        cv_.notify_all();
    }
    void synchronize() {
        std::unique_lock lock(mu_);
        idle_cv_.wait(lock, [this] { return queue_.empty() && !running_; });
    }
    [[nodiscard]] std::vector<unsigned char>& device() { return device_; }

    // One copy's view of the stream: device memory at `base`, one direction.
    class Port final : public StagingStream {
    public:
        Port(FakeStream& stream, std::uint64_t base, bool to_device)
            : stream_(stream), base_(base), to_device_(to_device) {}
        Result<void> enqueue_host_step(Step step) override {
            return stream_.push([step = std::move(step)](bool ok) { step(ok); });
        }
        Result<void> enqueue_device_copy(std::uint64_t offset, void* block, std::size_t bytes) override {
            unsigned char* device = stream_.device_.data() + base_ + offset;
            const bool to_device = to_device_;
            return stream_.push([device, block, bytes, to_device](bool ok) {
                if (!ok) return;
                if (to_device) std::memcpy(device, block, bytes);
                else std::memcpy(block, device, bytes);
            });
        }

    private:
        FakeStream& stream_;
        std::uint64_t base_;
        bool to_device_;
    };

private:
    Result<void> push(std::function<void(bool)> op) {
        {
            std::lock_guard lock(mu_);
            if (enqueues_++ == refuse_) return Error(KEEL_STATUS_INTERNAL, "enqueue refused by the test");
            queue_.push_back(std::move(op));
        }
        cv_.notify_all();
        return ok();
    }
    void run() {
        std::unique_lock lock(mu_);
        for (;;) {
            cv_.wait(lock, [this] { return stop_ || (!held_ && !queue_.empty()); });
            if (queue_.empty()) return;
            auto op = std::move(queue_.front());
            queue_.pop_front();
            const bool ok = executed_++ < fail_from_;
            running_ = true;
            lock.unlock();
            op(ok);
            op = nullptr;
            lock.lock();
            running_ = false;
            idle_cv_.notify_all();
        }
    }

    std::vector<unsigned char> device_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::condition_variable idle_cv_;
    std::deque<std::function<void(bool)>> queue_;  // guarded by mu_
    bool held_;                                   // guarded by mu_
    bool stop_ = false;                           // guarded by mu_
    bool running_ = false;                        // guarded by mu_
    std::uint64_t executed_ = 0;                  // guarded by mu_
    std::uint64_t enqueues_ = 0;                  // guarded by mu_
    std::uint64_t fail_from_ = UINT64_MAX;        // guarded by mu_
    std::uint64_t refuse_ = UINT64_MAX;           // guarded by mu_
    std::thread thread_;                          // last: runs once the members above exist
};

}  // namespace keel::staging::testing
