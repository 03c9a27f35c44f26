#include "stream.hpp"

#include <algorithm>
#include <optional>

namespace keel::level_zero {

Result<std::unique_ptr<Stream>> Stream::create(Device& device) {
    ze_command_queue_desc_t desc{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                 nullptr,
                                 device.limits().compute_ordinal,
                                 device.next_queue_index(),
                                 0,
                                 ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
                                 ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_list_handle_t list = nullptr;
    KEEL_TRY(KEEL_ZE(zeCommandListCreateImmediate, device.context(), device.handle(), &desc, &list).check());
    try {
        return std::make_unique<Stream>(Key{}, device, list);
    } catch (...) {
        (void)ze().zeCommandListDestroy(list);
        throw;
    }
}

Stream::~Stream() { (void)close(); }

Result<Stream::PendingOp> Stream::begin_locked(std::initializer_list<SlotRef> also_wait, EventSlotPool& signals) {
    if (list_ == nullptr) return Error(KEEL_STATUS_INTERNAL, "the stream was closed");
    KEEL_TRY(health_->check());
    reap_locked();
    KEEL_TRY(health_->check());
    PendingOp op;
    KEEL_TRY_ASSIGN(op.signal, signals.acquire());
    if (tail_) op.waited.push_back(tail_);
    for (const SlotRef& s : also_wait)
        if (s) op.waited.push_back(s);
    op.waits.reserve(op.waited.size());
    for (const SlotRef& s : op.waited) op.waits.push_back(s->event);
    return op;
}

Result<SlotRef> Stream::commit_locked(PendingOp op, const ZeCall& call, Keep keep) {
    if (!call.ok()) {
        Error error = call.error();
        // Nothing was enqueued: the work before it is not its victim.
        if (is_device_fatal(call.result)) health_->fail(error, ops_++);
        return error;  // `op` goes: its slot, never signalled, returns to the pool
    }
    tail_ = op.signal;
    in_flight_.push_back(InFlight{std::move(op.signal), ops_++, std::move(op.waited), std::move(keep)});
    return tail_;
}

void Stream::reap_locked() {
    std::optional<std::uint64_t> completed;
    while (!in_flight_.empty()) {
        const ze_result_t state = ze().zeEventQueryStatus(in_flight_.front().done->event);
        if (state == ZE_RESULT_NOT_READY) break;
        if (state != ZE_RESULT_SUCCESS) {
            if (is_device_fatal(state))
                health_->fail(ZeCall{"zeEventQueryStatus", state}.error(), in_flight_.front().op);
            break;
        }
        completed = in_flight_.front().op;
        in_flight_.pop_front();
    }
    if (completed) health_->settle(*completed);  // their waits passed their points
    if (in_flight_.empty()) tail_.reset();  // complete: nothing to wait for
}

Result<void> Stream::enqueue_host(HostWorker::Task task, Keep keep) {
    std::lock_guard lock(mutex_);
    KEEL_TRY_ASSIGN(PendingOp op, begin_locked({}, device_.slots()));
    if (!worker_) worker_ = std::make_unique<HostWorker>(*health_);
    SlotRef after = op.waited.empty() ? SlotRef() : op.waited.front();
    worker_->push(std::move(task), std::move(after), op.signal, ops_);  // commit_locked numbers it ops_
    KEEL_TRY(commit_locked(std::move(op), ZeCall{"zeEventHostSignal", ZE_RESULT_SUCCESS}, std::move(keep)));
    return ok();
}

Result<ze_kernel_handle_t> Stream::kernel_locked(const char* name, ze_module_handle_t module) {
    for (const auto& [known, kernel] : kernels_)
        if (known == name) return kernel;
    ze_kernel_desc_t desc{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, name};
    ze_kernel_handle_t kernel = nullptr;
    KEEL_TRY(KEEL_ZE(zeKernelCreate, module, &desc, &kernel).check(name));
    try {
        kernels_.emplace_back(name, kernel);
    } catch (...) {
        (void)ze().zeKernelDestroy(kernel);
        throw;
    }
    return kernel;
}

Result<void> Stream::launch(const KernelLaunch& l) {
    std::lock_guard lock(mutex_);
    KEEL_TRY_ASSIGN(PendingOp op, begin_locked({}, device_.slots()));
    KEEL_TRY_ASSIGN(ze_kernel_handle_t kernel, kernel_locked(l.kernel, l.module));
    const DeviceLimits& limits = device_.limits();
    const std::uint64_t wanted = (l.items + limits.group_size - 1) / limits.group_size;
    const ze_group_count_t groups{static_cast<uint32_t>(std::clamp<std::uint64_t>(wanted, 1, limits.max_group_count)),
                                  1, 1};
    ZeCall call = KEEL_ZE(zeKernelSetGroupSize, kernel, limits.group_size, 1, 1);
    for (std::size_t i = 0; call.ok() && i < l.args.size(); ++i)
        call = KEEL_ZE(zeKernelSetArgumentValue, kernel, static_cast<uint32_t>(i), l.args[i].size, l.args[i].value);
    if (call.ok())
        call = KEEL_ZE(zeCommandListAppendLaunchKernel, list_, kernel, &groups, op.signal->event,
                       static_cast<uint32_t>(op.waits.size()), op.waits.data());
    KEEL_TRY(commit_locked(std::move(op), call, {}));
    return ok();
}

Result<StreamPoint> Stream::mark_time() {
    std::lock_guard lock(mutex_);
    KEEL_TRY_ASSIGN(PendingOp op, begin_locked({}, device_.timestamp_slots()));
    const ZeCall call = KEEL_ZE(zeCommandListAppendBarrier, list_, op.signal->event,
                                static_cast<uint32_t>(op.waits.size()), op.waits.data());
    KEEL_TRY_ASSIGN(SlotRef slot, commit_locked(std::move(op), call, {}));
    return StreamPoint{std::move(slot), health_, ops_};
}

Result<StreamPoint> Stream::point() {
    std::lock_guard lock(mutex_);
    KEEL_TRY(health_->check());
    reap_locked();
    KEEL_TRY(health_->check());
    return StreamPoint{tail_, health_, ops_};
}

Result<void> Stream::wait(const StreamPoint& point) {
    const bool passed = !point.slot || ze().zeEventQueryStatus(point.slot->event) == ZE_RESULT_SUCCESS;
    std::lock_guard lock(mutex_);
    if (!passed) {
        // A barrier that waits for the chain and the point: later work of
        // the stream, events recorded after it included, is ordered behind it.
        KEEL_TRY_ASSIGN(PendingOp op, begin_locked({point.slot}, device_.slots()));
        const std::uint64_t at = ops_;
        const ZeCall call = KEEL_ZE(zeCommandListAppendBarrier, list_, op.signal->event,
                                    static_cast<uint32_t>(op.waits.size()), op.waits.data());
        KEEL_TRY(commit_locked(std::move(op), call, {}));
        if (point.health) health_->depend(point.health, point.ops, at);
        return ok();
    }
    if (list_ == nullptr) return Error(KEEL_STATUS_INTERNAL, "the stream was closed");
    // Passed already: nothing to wait for on the device, but a failure
    // before it still travels (a position of its own, so that events
    // recorded from now on report it and earlier ones do not).
    if (point.health) {
        const std::uint64_t at = ops_++;
        health_->depend(point.health, point.ops, at);
        health_->settle(at);
    }
    return ok();
}

SlotWait Stream::wait_for(const SlotRef& slot, std::uint64_t op) {
    SlotWait waited = wait_for_slot(*slot);
    if (waited.error) health_->fail(*waited.error, op);
    return waited;
}

Result<void> Stream::synchronize() {
    SlotRef tail;
    std::uint64_t tail_op = 0;
    HostWorker* worker = nullptr;  // lives until close(), which no call overlaps
    std::uint64_t ticket = 0;
    {
        std::lock_guard lock(mutex_);
        reap_locked();
        tail = tail_;
        if (!in_flight_.empty()) tail_op = in_flight_.back().op;
        worker = worker_.get();
        if (worker != nullptr) ticket = worker->pushed();
    }
    // Without the lock: other threads keep enqueueing (their work is not
    // waited for, as the ABI says: "enqueued before this call"). Waited for
    // on a failed stream too: its caller may free what that work touches.
    bool completed = true;
    std::optional<Error> found;  // reported as is when this call found it
    if (tail) {
        SlotWait waited = wait_for(tail, tail_op);
        completed = waited.completed;
        found = std::move(waited.error);
    }
    // A lost device broke the chain, but host functions enqueued so far
    // still run (with the error): let them, before reporting it.
    if (!completed && worker != nullptr) worker->wait_for(ticket);
    std::lock_guard lock(mutex_);
    reap_locked();
    Result<void> sticky = health_->check();
    if (!sticky.ok() && found) return std::move(*found);
    return sticky;
}

Result<bool> Stream::query() {
    std::lock_guard lock(mutex_);
    KEEL_TRY(health_->check());
    reap_locked();
    KEEL_TRY(health_->check());
    return in_flight_.empty();
}

Result<void> Stream::close() {
    std::unique_lock lock(mutex_);
    if (list_ == nullptr) return ok();
    SlotRef tail = tail_;
    const std::uint64_t tail_op = in_flight_.empty() ? 0 : in_flight_.back().op;
    lock.unlock();
    // Everything enqueued completes (or the device is lost) before the list
    // and its kernels go and the slots the commands wait for are reset; host
    // tasks run to the end on the worker.
    if (tail) (void)wait_for(tail, tail_op);
    lock.lock();
    std::unique_ptr<HostWorker> worker = std::move(worker_);
    lock.unlock();
    worker.reset();  // joins after running what was queued
    lock.lock();
    reap_locked();
    in_flight_.clear();
    tail_.reset();
    if (ops_ > 0) health_->settle(ops_ - 1);
    for (const auto& entry : kernels_) (void)ze().zeKernelDestroy(entry.second);
    kernels_.clear();
    const ZeCall destroyed = KEEL_ZE(zeCommandListDestroy, list_);
    list_ = nullptr;
    KEEL_TRY(health_->check());
    return destroyed.check();
}

}  // namespace keel::level_zero
