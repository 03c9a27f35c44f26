// Event: a point in a stream's work that the host or another stream can wait for.
#pragma once

#include <keel/device.hpp>
#include <keel/export.hpp>
#include <keel/keel.h>
#include <keel/result.hpp>

namespace keel {

class Stream;

enum class EventTiming : bool { off = false, on = true };

// Owns one plugin event (event_create ... event_destroy).
//
// An event never recorded is complete. record() captures the work enqueued
// on a stream so far; query()/synchronize() observe the most recent record
// and report the stream's error if work before it failed.
//
// Move-only. A moved-from event is empty: every call fails with
// INVALID_ARGUMENT. Destroying an event with a pending record is fine (the
// record completes harmlessly; waits already enqueued on it stay valid).
//
// Threads: may be sent to another thread; record/query/synchronize are const
// and may be called from several threads at once.
class KEEL_API Event {
public:
    // EventTiming::on makes elapsed_ms() usable (may cost more per record).
    [[nodiscard]] static Result<Event> create(const Device& device,
                                              EventTiming timing = EventTiming::off);

    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    Event(Event&& other) noexcept;
    Event& operator=(Event&& other) noexcept;
    ~Event();

    [[nodiscard]] const Device& device() const noexcept { return device_; }
    [[nodiscard]] bool empty() const noexcept { return handle_ == nullptr; }
    [[nodiscard]] bool timing() const noexcept { return timing_ == EventTiming::on; }

    // Captures `stream`'s work enqueued so far (same device only).
    [[nodiscard]] Result<void> record(const Stream& stream) const;
    // Non-blocking: true when the most recent record has completed.
    [[nodiscard]] Result<bool> query() const;
    // Blocks until the most recent record has completed.
    [[nodiscard]] Result<void> synchronize() const;

    // Milliseconds between two completed timing events of one device.
    // UNIMPLEMENTED when the plugin lacks event_elapsed_time.
    [[nodiscard]] static Result<float> elapsed_ms(const Event& start, const Event& end);

private:
    friend struct detail::Access;
    Event(Device device, keel_event handle, EventTiming timing) noexcept
        : device_(std::move(device)), handle_(handle), timing_(timing) {}
    [[nodiscard]] KEEL_LOCAL Result<void> check(const char* where) const;

    Device device_;
    keel_event handle_ = nullptr;
    EventTiming timing_ = EventTiming::off;
};

}  // namespace keel
