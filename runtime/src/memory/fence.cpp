#include <keel/memory/fence.hpp>

#include "log.hpp"

namespace keel::memory {

Result<Fence> Fence::record(MemoryCore& core, keel_stream from) {
    if (from == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Fence::record] stream is null");
    auto event = core.events().acquire();
    if (!event.ok()) return std::move(event).error().context("Fence::record");
    auto recorded = core.ops().event_record(*event, from);
    if (!recorded.ok()) {
        core.events().release(*event);
        return std::move(recorded).error().context("Fence::record");
    }
    Fence fence;
    fence.core_ = &core;
    fence.from_ = from;
    fence.event_ = *event;
    fence.seq_ = core.tracker().next_seq();
    return fence;
}

Result<void> Fence::enqueue_wait(keel_stream to) const {
    if (event_ == nullptr) return ok();
    if (to == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Fence::enqueue_wait] stream is null");
    auto r = core_->ops().stream_wait_event(to, event_);
    if (!r.ok()) return std::move(r).error().context("Fence::enqueue_wait");
    return ok();
}

void Fence::reset() noexcept {
    if (event_ == nullptr) return;
    // Waits already enqueued keep the captured point, but a host query of a
    // recycled event would not: recycle only once the point is reached.
    try {
        core_->tracker().track(from_, seq_, event_, /*owns_event=*/true, WorkKind::fence, DeferredTask{});
    } catch (...) {
        (void)core_->ops().event_synchronize(event_);
        core_->events().release(event_);
    }
    event_ = nullptr;
    core_ = nullptr;
    from_ = nullptr;
}

Result<void> order_after(MemoryCore& core, keel_stream to, keel_stream from) {
    if (to == from) return ok();  // a stream is already in order with itself
    KEEL_TRY_ASSIGN(Fence fence, Fence::record(core, from));
    return fence.enqueue_wait(to);
}

}  // namespace keel::memory
