#include <keel/event.hpp>

#include <keel/stream.hpp>

#include "access.hpp"
#include "logging.hpp"
#include "plugin.hpp"

#include <utility>

namespace keel {

Result<Event> Event::create(const Device& device, EventTiming timing) {
    keel_event handle = nullptr;
    const std::uint32_t flags = timing == EventTiming::on ? KEEL_EVENT_TIMING : KEEL_EVENT_DEFAULT;
    KEEL_TRY(detail::Access::slot(device).api().event_create(detail::Access::handle(device), flags, &handle));
    return Event(device, handle, timing);
}

Event::Event(Event&& other) noexcept
    : device_(other.device_),
      handle_(std::exchange(other.handle_, nullptr)),
      timing_(other.timing_) {}

Event& Event::operator=(Event&& other) noexcept {
    if (this != &other) {
        if (handle_ != nullptr) {
            if (auto r = detail::Access::slot(device_).api().event_destroy(handle_); !r)
                detail::logger()->warn("[Event::operator=] {}", r.error().message());
        }
        device_ = other.device_;
        handle_ = std::exchange(other.handle_, nullptr);
        timing_ = other.timing_;
    }
    return *this;
}

Event::~Event() {
    if (handle_ == nullptr) return;
    if (auto r = detail::Access::slot(device_).api().event_destroy(handle_); !r)
        detail::logger()->warn("[Event::~Event] {}", r.error().message());
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
    if (stream.device() != device_)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Event::record] the event is of " +
                                                       device_.name() + " but the stream of " +
                                                       stream.device().name());
    return detail::Access::slot(device_).api().event_record(handle_, detail::Access::handle(stream));
}

Result<bool> Event::query() const {
    KEEL_TRY(check("Event::query"));
    std::int32_t done = 0;
    KEEL_TRY(detail::Access::slot(device_).api().event_query(handle_, &done));
    return done != 0;
}

Result<void> Event::synchronize() const {
    KEEL_TRY(check("Event::synchronize"));
    return detail::Access::slot(device_).api().event_synchronize(handle_);
}

Result<float> Event::elapsed_ms(const Event& start, const Event& end) {
    KEEL_TRY(start.check("Event::elapsed_ms"));
    KEEL_TRY(end.check("Event::elapsed_ms"));
    if (start.device() != end.device())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Event::elapsed_ms] the events are of " +
                                                       start.device().name() + " and " +
                                                       end.device().name());
    if (!start.timing() || !end.timing())
        return Error(KEEL_STATUS_FAILED_PRECONDITION,
                     "[Event::elapsed_ms] both events must be created with EventTiming::on");
    float ms = 0.0f;
    KEEL_TRY(detail::Access::slot(start.device()).api().event_elapsed_time(start.handle_, end.handle_, &ms));
    return ms;
}

}  // namespace keel
