// Holds a stream's worker inside a host function until the measuring thread
// opens the gate, so that the enqueues timed meanwhile only queue up: the
// worker takes none of them (no queue lines moving between cores, no
// wake-ups of a worker that parked between enqueues).
//
// Thread-safety: hold() runs on the stream's worker; wait_held() and open()
// on the measuring thread, one gate at a time.
#pragma once

#include <semaphore.h>

#include <atomic>
#include <cerrno>
#include <thread>

namespace keel_bench {

class WorkerGate {
public:
    WorkerGate() { ::sem_init(&open_, 0, 0); }
    WorkerGate(const WorkerGate&) = delete;
    WorkerGate& operator=(const WorkerGate&) = delete;
    WorkerGate(WorkerGate&&) = delete;
    WorkerGate& operator=(WorkerGate&&) = delete;
    ~WorkerGate() { ::sem_destroy(&open_); }

    // The host function's body. It sleeps in the kernel (sem_wait), not
    // spinning on a line the measuring thread's core might want.
    void hold() noexcept {
        held_.store(true, std::memory_order_release);
        while (::sem_wait(&open_) != 0 && errno == EINTR) {
        }
    }
    // Returns once the worker is inside hold(): from here on it takes nothing.
    void wait_held() const {
        while (!held_.load(std::memory_order_acquire)) std::this_thread::yield();
    }
    void open() noexcept {
        held_.store(false, std::memory_order_relaxed);
        ::sem_post(&open_);
    }

private:
    std::atomic<bool> held_{false};
    sem_t open_{};
};

}  // namespace keel_bench
