#include "parallel_for.hpp"

#include <keel/plugin/plugin_global.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <sched.h>

namespace keel::cpu {
namespace {

struct Job {
    const std::function<void(std::size_t, std::size_t)>* body = nullptr;
    std::size_t n = 0;
    std::size_t chunk = 0;
    std::size_t chunks = 0;
    std::atomic<std::size_t> next{0};
    std::size_t done = 0;     // chunks finished, under the pool mutex
    std::size_t helpers = 0;  // pool threads inside this job, under the pool mutex
};

class ThreadPool {
public:
    explicit ThreadPool(std::uint32_t size) : size_(size) {}
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;
    ThreadPool(ThreadPool&&) = delete;
    ThreadPool& operator=(ThreadPool&&) = delete;
    ~ThreadPool() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        work_cv_.notify_all();
        for (auto& t : threads_) t.join();
    }

    [[nodiscard]] std::uint32_t size() const noexcept { return size_; }

    void run(Job& job) {
        {
            std::lock_guard lock(mutex_);
            if (threads_.empty())
                for (std::uint32_t i = 1; i < size_; ++i) threads_.emplace_back([this] { loop(); });
            jobs_.push_back(&job);
        }
        work_cv_.notify_all();
        const std::size_t mine = work_on(job);
        std::unique_lock lock(mutex_);
        job.done += mine;
        auto it = std::find(jobs_.begin(), jobs_.end(), &job);
        if (it != jobs_.end()) jobs_.erase(it);
        done_cv_.wait(lock, [&] { return job.done == job.chunks && job.helpers == 0; });
    }

private:
    static std::size_t work_on(Job& job) {
        std::size_t count = 0;
        for (;;) {
            const std::size_t c = job.next.fetch_add(1, std::memory_order_relaxed);
            if (c >= job.chunks) return count;
            const std::size_t begin = c * job.chunk;
            (*job.body)(begin, std::min(job.n, begin + job.chunk));
            ++count;
        }
    }

    void loop() {
        std::unique_lock lock(mutex_);
        for (;;) {
            work_cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
            if (stopping_) return;
            Job* job = jobs_.front();
            if (job->next.load(std::memory_order_relaxed) >= job->chunks) {
                jobs_.pop_front();  // every chunk taken: nothing left to help with
                continue;
            }
            ++job->helpers;
            lock.unlock();
            const std::size_t mine = work_on(*job);
            lock.lock();
            job->done += mine;
            --job->helpers;
            if (job->done == job->chunks && job->helpers == 0) done_cv_.notify_all();
        }
    }

    const std::uint32_t size_;
    std::mutex mutex_;
    std::condition_variable work_cv_;
    std::condition_variable done_cv_;
    std::deque<Job*> jobs_;
    std::vector<std::thread> threads_;
    bool stopping_ = false;
};

plugin::PluginGlobal<ThreadPool> g_pool;  // set between start and stop

std::uint32_t cores() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return static_cast<std::uint32_t>(CPU_COUNT(&set));
    return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

void start_thread_pool(std::uint32_t threads) {
    g_pool.emplace(threads == 0 ? cores() : threads);
}

void stop_thread_pool() noexcept { g_pool.reset(); }

std::uint32_t thread_pool_size() noexcept { return g_pool ? g_pool->size() : 1; }

void parallel_for(std::size_t n, std::size_t grain,
                  const std::function<void(std::size_t, std::size_t)>& body) {
    if (n == 0) return;
    grain = std::max<std::size_t>(grain, 1);
    const std::uint32_t workers = thread_pool_size();
    if (n <= grain || workers <= 1 || !g_pool) {
        body(0, n);
        return;
    }
    // A few chunks per worker, so uneven progress still balances.
    const std::size_t wanted = std::min<std::size_t>((n + grain - 1) / grain, std::size_t{workers} * 4);
    Job job;
    job.body = &body;
    job.n = n;
    job.chunk = (n + wanted - 1) / wanted;
    job.chunks = (n + job.chunk - 1) / job.chunk;
    g_pool->run(job);
}

}  // namespace keel::cpu
