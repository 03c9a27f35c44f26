#include "host_worker.hpp"

#include "slot_wait.hpp"
#include "ze_error.hpp"

#include <algorithm>
#include <chrono>

#include <cstdint>

namespace keel::level_zero {

HostWorker::HostWorker(StreamHealth& health) : health_(health), thread_([this] { run(); }) {}

HostWorker::~HostWorker() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
}

void HostWorker::push(Task task, SlotRef after, SlotRef done, std::uint64_t op) {
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(Item{std::move(task), std::move(after), std::move(done), op});
        ++pushed_;
    }
    wake_.notify_one();
}

std::uint64_t HostWorker::pushed() {
    std::lock_guard lock(mutex_);
    return pushed_;
}

void HostWorker::wait_for(std::uint64_t ticket) {
    std::unique_lock lock(mutex_);
    ran_.wait(lock, [&] { return finished_ >= ticket; });
}

void HostWorker::run() noexcept {
    for (;;) {
        Item item;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) return;  // stopping, and everything ran
            item = std::move(queue_.front());
            queue_.pop_front();
        }
        execute(item);
        {
            std::lock_guard lock(mutex_);
            ++finished_;
        }
        ran_.notify_all();
    }
}

void HostWorker::execute(Item& item) noexcept {
    if (item.after) {
        // Also after a failed wait, the task runs only once the work before
        // it is over: a copy-out step must not hand its staging block back
        // while the device still writes it.
        SlotWait waited = wait_for_slot(*item.after);
        if (waited.error) health_.fail(std::move(*waited.error), item.op);
    }
    try {
        const Status status = health_.status_of(item.op);
        Result<void> r = item.task(status);
        if (!r.ok() && status == KEEL_STATUS_OK) health_.fail(std::move(r).error(), item.op);
    } catch (...) {
        // A task must not throw (keel_host_fn is a C function); nothing to
        // report it to, and the stream must go on.
    }
    signal(item);
    item = Item{};  // release the task and the slots before taking the next
}

void HostWorker::signal(const Item& item) noexcept {
    auto pause = std::chrono::microseconds(50);
    const auto deadline = std::chrono::steady_clock::now() + kGiveUpAfter;
    for (;;) {
        const ze_result_t signalled = ze().zeEventHostSignal(item.done->event);
        if (signalled == ZE_RESULT_SUCCESS) return;
        health_.fail(ZeCall{"zeEventHostSignal", signalled}.error(), item.op);
        // A lost device runs nothing more: no command waits any longer.
        if (device_lost(*item.done)) return;
        if (std::chrono::steady_clock::now() >= deadline) return;
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(5000));
    }
}

}  // namespace keel::level_zero
