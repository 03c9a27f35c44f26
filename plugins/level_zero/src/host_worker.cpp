#include "host_worker.hpp"

#include "ze_error.hpp"

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

void HostWorker::push(Task task, SlotRef after, SlotRef done) {
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(Item{std::move(task), std::move(after), std::move(done)});
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
        const ze_result_t waited = ze().zeEventHostSynchronize(item.after->event, UINT64_MAX);
        if (waited != ZE_RESULT_SUCCESS) health_.fail(ZeCall{"zeEventHostSynchronize", waited}.error());
    }
    try {
        item.task(health_.status());
    } catch (...) {
        // A task must not throw (keel_host_fn is a C function); nothing to
        // report it to, and the stream must go on.
    }
    const ze_result_t signalled = ze().zeEventHostSignal(item.done->event);
    if (signalled != ZE_RESULT_SUCCESS) health_.fail(ZeCall{"zeEventHostSignal", signalled}.error());
    item = Item{};  // release the task and the slots before taking the next
}

}  // namespace keel::level_zero
