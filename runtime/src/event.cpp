#include <keel/event.hpp>

#include <keel/stream.hpp>

#include "access.hpp"
#include "diagnose/host_waits.hpp"
#include "diagnose/ledger.hpp"
#include "logging.hpp"
#include "ordering_marks.hpp"
#include "plugin.hpp"
#include "trace/hooks.hpp"

#include <new>
#include <utility>

namespace keel {

Result<Event> Event::create(const Device& device, EventTiming timing) {
    const detail::DeviceSlot& slot = detail::Access::slot(device);
    keel_event handle = nullptr;
    const std::uint32_t flags = timing == EventTiming::on ? KEEL_EVENT_TIMING : KEEL_EVENT_DEFAULT;
    KEEL_TRY(slot.api().event_create(slot.handle, flags, &handle));
    detail::ordering::event_gone(handle);  // a handle the plugin reuses carries nothing
    return Event(&slot, handle, slot.plugin->shares().take(), timing);
}

Event::Event(Event&& other) noexcept
    : device_(other.device_),
      handle_(std::exchange(other.handle_, nullptr)),
      share_(other.share_),
      timing_(other.timing_),
      site_(other.site_.exchange(0, std::memory_order_relaxed)) {}

Event& Event::operator=(Event&& other) noexcept {
    if (this != &other) {
        reset();
        device_ = other.device_;
        handle_ = std::exchange(other.handle_, nullptr);
        share_ = other.share_;
        timing_ = other.timing_;
        site_.store(other.site_.exchange(0, std::memory_order_relaxed), std::memory_order_relaxed);
    }
    return *this;
}

Event::~Event() { reset(); }

void Event::reset() noexcept {
    if (handle_ == nullptr) return;
    detail::ordering::event_gone(handle_);
    if (auto r = device_->api().event_destroy(std::exchange(handle_, nullptr)); !r)
        detail::log_warn("[Event] " + r.error().message());
    device_->plugin->shares().let_go(share_);  // last: the plugin may go with it
}

Result<Device> Event::device() const {
    KEEL_TRY(check("Event::device"));
    try {
        return detail::Access::device(device_->plugin->shares().handle(*device_));
    } catch (const std::bad_alloc&) {
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[Event::device] out of host memory");
    }
}

Result<void> Event::check(const char* where) const {
    if (handle_ == nullptr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     std::string("[") + where + "] the event is empty (moved-from)");
    return ok();
}

Result<void> Event::record(const Stream& stream) const {
    KEEL_TRY(check("Event::record"));
    if (stream.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Event::record] the stream is empty (moved-from or closed)");
    if (&detail::Access::slot(stream.device()) != device_)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Event::record] the event is of " +
                                                       device_->name + " but the stream of " +
                                                       stream.device().name());
    trace::OpScope traced(stream, trace::Kind::record_event, 0);
    KEEL_TRY(device_->api().event_record(handle_, detail::Access::handle(stream)));
    detail::ordering::event_recorded(handle_, detail::Access::handle(stream));
    if (doctor::StreamLedger* ledger = detail::Access::ledger(stream))
        site_.store(doctor::make_site(ledger->id(), ledger->note_blocking(doctor::OpKind::record).index),
                    std::memory_order_relaxed);
    return ok();
}

Result<bool> Event::query() const {
    KEEL_TRY(check("Event::query"));
    std::int32_t done = 0;
    KEEL_TRY(device_->api().event_query(handle_, &done));
    return done != 0;
}

Result<void> Event::synchronize() const {
    KEEL_TRY(check("Event::synchronize"));
    trace::WaitScope waiting("Event::synchronize", 0);
    const doctor::HostWait host_wait("Event::synchronize", site_.load(std::memory_order_relaxed));
    return device_->api().event_synchronize(handle_);
}

Result<float> Event::elapsed_ms(const Event& start, const Event& end) {
    KEEL_TRY(start.check("Event::elapsed_ms"));
    KEEL_TRY(end.check("Event::elapsed_ms"));
    if (start.device_ != end.device_)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Event::elapsed_ms] the events are of " +
                                                       start.device_->name + " and " +
                                                       end.device_->name);
    if (!start.timing() || !end.timing())
        return Error(KEEL_STATUS_FAILED_PRECONDITION,
                     "[Event::elapsed_ms] both events must be created with EventTiming::on");
    float ms = 0.0f;
    KEEL_TRY(start.device_->api().event_elapsed_time(start.handle_, end.handle_, &ms));
    return ms;
}

}  // namespace keel
