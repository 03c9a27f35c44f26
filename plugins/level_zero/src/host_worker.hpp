// Level Zero has no host functions. A stream that needs one gets a worker
// thread (on first use) that runs host tasks in stream order:
//
//   1. the task's `after` slot is the stream's last operation before it;
//      the worker waits for it on the host (zeEventHostSynchronize),
//   2. runs the task with the stream's status (OK, or its sticky error);
//      a task's error fails the stream from this point on,
//   3. signals the task's own slot from the host (zeEventHostSignal); the
//      stream's next operation waits for that slot on the device.
//
// So the device never blocks on the host except where the stream really
// has a host function, and a blocked host function holds back only its own
// stream. Cost per task: a host wake-up after the preceding work completes
// and a device wake-up after the signal (see README.md for figures).
#pragma once

#include "event_slots.hpp"
#include "stream_health.hpp"

#include <keel/result.hpp>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace keel::level_zero {

// Thread-safe: push() from any thread; tasks run on the worker thread, one
// at a time, in push order.
class HostWorker {
public:
    // A task's error fails the stream from the task's own operation on.
    using Task = std::function<Result<void>(Status)>;

    explicit HostWorker(StreamHealth& health);
    HostWorker(const HostWorker&) = delete;
    HostWorker& operator=(const HostWorker&) = delete;
    HostWorker(HostWorker&&) = delete;
    HostWorker& operator=(HostWorker&&) = delete;
    // Runs every task already pushed, then joins the thread.
    ~HostWorker();

    // Runs `task`, the stream's operation number `op`, once `after` (null:
    // nothing) completed, then signals `done`.
    void push(Task task, SlotRef after, SlotRef done, std::uint64_t op);

    // Tasks pushed so far: a ticket for wait_for().
    [[nodiscard]] std::uint64_t pushed();
    // Returns once the first `ticket` tasks ran. A stream whose wait failed
    // (lost device) uses it so that host functions enqueued before a
    // synchronize have run, with the error, when it returns.
    void wait_for(std::uint64_t ticket);

private:
    struct Item {
        Task task;
        SlotRef after;
        SlotRef done;
        std::uint64_t op = 0;
    };
    void run() noexcept;
    void execute(Item& item) noexcept;
    // Signals `item.done`, retrying a failed signal (the stream then
    // failed): the device chain behind it waits for it, and a slot never
    // signalled would hang every wait after it.
    void signal(const Item& item) noexcept;

    StreamHealth& health_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable ran_;
    std::deque<Item> queue_;      // guarded by mutex_
    std::uint64_t pushed_ = 0;    // guarded by mutex_
    std::uint64_t finished_ = 0;  // guarded by mutex_
    bool stopping_ = false;       // guarded by mutex_
    std::thread thread_;      // last: started once the members above exist
};

}  // namespace keel::level_zero
