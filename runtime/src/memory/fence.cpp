#include "memory/fence.hpp"

#include "access.hpp"
#include "memory/event_wait.hpp"
#include "ordering_marks.hpp"

#include <utility>

namespace keel {

namespace memory {

Result<Fence> record_fence(const std::shared_ptr<MemoryCore>& core, keel_stream from) {
    if (from == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Stream::fence] stream is null");
    // The fence's share of the core first: every later failure gives it back.
    StreamPool* share = nullptr;
    try {
        share = &core->allocator().share_owner(from);
    } catch (...) {
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[Stream::fence] out of host memory");
    }
    auto event = core->events().acquire();
    if (!event.ok()) {
        core->allocator().let_go(*share);
        return std::move(event).error().context("Stream::fence");
    }
    auto recorded = core->ops().event_record(*event, from);
    if (!recorded.ok()) {
        core->events().release(*event);
        core->allocator().let_go(*share);
        return std::move(recorded).error().context("Stream::fence");
    }
    detail::ordering::event_recorded(*event, from);
    Fence fence;
    detail::Access::memory(fence) = core.get();
    detail::Access::share(fence) = share;
    detail::Access::device(fence) = core->device();
    detail::Access::from(fence) = from;
    detail::Access::event(fence) = *event;
    detail::Access::seq(fence) = core->tracker().next_seq(from);
    return fence;
}

Result<void> wait_fence(const Fence& fence, keel_stream to) {
    if (fence.empty()) return ok();
    if (to == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Stream::wait] stream is null");
    auto r = detail::Access::memory(fence)->ops().stream_wait_event(to, detail::Access::event(fence));
    if (!r.ok()) return std::move(r).error().context("Stream::wait");
    return ok();
}

Result<void> order_after(const std::shared_ptr<MemoryCore>& core, keel_stream to, keel_stream from) {
    if (to == from) return ok();  // a stream is already in order with itself
    KEEL_TRY_ASSIGN(Fence fence, record_fence(core, from));
    return wait_fence(fence, to);
}

}  // namespace memory

Fence::Fence() noexcept = default;

Fence::Fence(Fence&& other) noexcept
    : memory_(std::exchange(other.memory_, nullptr)),
      share_(std::exchange(other.share_, nullptr)),
      device_(std::exchange(other.device_, nullptr)),
      from_(std::exchange(other.from_, nullptr)),
      event_(std::exchange(other.event_, nullptr)),
      seq_(std::exchange(other.seq_, 0)),
      site_(std::exchange(other.site_, 0)) {}

Fence& Fence::operator=(Fence&& other) noexcept {
    if (this != &other) {
        reset();
        memory_ = std::exchange(other.memory_, nullptr);
        share_ = std::exchange(other.share_, nullptr);
        device_ = std::exchange(other.device_, nullptr);
        from_ = std::exchange(other.from_, nullptr);
        event_ = std::exchange(other.event_, nullptr);
        seq_ = std::exchange(other.seq_, 0);
        site_ = std::exchange(other.site_, 0);
    }
    return *this;
}

Fence::~Fence() { reset(); }

void Fence::reset() noexcept {
    if (event_ == nullptr) return;
    // Waits already enqueued keep the captured point, but a host query of a
    // recycled event would not: recycle only once the point is reached.
    memory::MemoryCore& core = *memory_;
    detail::ordering::event_gone(event_);
    try {
        core.tracker().track(from_, seq_, event_, /*owns_event=*/true, memory::WorkKind::fence, HostFunc{});
    } catch (...) {
        (void)memory::wait_for_event(core.ops(), event_);
        core.events().release(event_);
    }
    event_ = nullptr;
    from_ = nullptr;
    device_ = nullptr;
    memory_ = nullptr;
    core.allocator().let_go(*std::exchange(share_, nullptr));  // last: the core may go with it
}

}  // namespace keel
