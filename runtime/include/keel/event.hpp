// Event: a point in a stream's work that the host or another stream can wait for.
#pragma once

#include <keel/device.hpp>
#include <keel/export.hpp>
#include <keel/keel.h>
#include <keel/result.hpp>

#include <atomic>
#include <cstdint>

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
// An event keeps its device's plugin loaded, as a Device does, but without
// holding a Device: making and dropping events on several threads writes no
// counter that the threads share. It may outlive every Device, Stream and
// the Runtime.
//
// Threads: may be sent to another thread and dropped there; record/query/
// synchronize are const and may be called from several threads at once.
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

    // A Device handle of the event's device (a new reference: prefer
    // keeping the Device the event was made from). INVALID_ARGUMENT when
    // the event is empty.
    [[nodiscard]] Result<Device> device() const;
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
    Event(const detail::DeviceSlot* device, keel_event handle, std::uint32_t share,
          EventTiming timing) noexcept
        : device_(device), handle_(handle), share_(share), timing_(timing) {}
    [[nodiscard]] KEEL_LOCAL Result<void> check(const char* where) const;
    KEEL_LOCAL void reset() noexcept;

    // While handle_ is set, the event holds a share of its plugin counted
    // in shard share_ (plugin_shares.hpp), which keeps device_ alive.
    const detail::DeviceSlot* device_ = nullptr;
    keel_event handle_ = nullptr;
    std::uint32_t share_ = 0;
    EventTiming timing_ = EventTiming::off;
    // Where the most recent record is in its stream's work (the hang
    // doctor's site: stream and operation), 0 when never recorded.
    mutable std::atomic<std::uint64_t> site_{0};
};

}  // namespace keel
