// A keel event: the point of a stream it was last recorded at, as a slot
// (event_slots.hpp). Recording an event on a stream whose work has all
// completed captures nothing: the event is complete at once. A timing event
// is recorded as a barrier whose slot carries kernel timestamps. An
// interprocess event (KEEL_EVENT_INTERPROCESS, or imported) also has an
// InterprocessEvent: the exporter's records complete it for other
// processes; an imported event is only that (no point of its own).
#pragma once

#include "device.hpp"
#include "event_slots.hpp"
#include "interprocess_event.hpp"
#include "stream.hpp"

#include <memory>
#include <mutex>
#include <utility>

namespace keel::level_zero {

// Shared by threads through its handle (recorded on one, waited on by
// another): the point is swapped under a mutex.
class Event {
public:
    Event(Device& device, bool timing, std::shared_ptr<InterprocessEvent> shared = {}) noexcept
        : device_(device), timing_(timing), shared_(std::move(shared)) {}
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    Event(Event&&) = delete;
    Event& operator=(Event&&) = delete;
    ~Event() = default;  // the slot returns to its pool once nothing else uses it

    [[nodiscard]] Device& device() const noexcept { return device_; }
    [[nodiscard]] bool timing() const noexcept { return timing_; }
    // Null unless the event is shared with other processes.
    [[nodiscard]] const std::shared_ptr<InterprocessEvent>& shared() const noexcept { return shared_; }
    [[nodiscard]] bool imported() const noexcept { return shared_ && shared_->imported(); }

    // The point of the most recent record (a null slot: complete, or never
    // recorded).
    [[nodiscard]] StreamPoint point() const {
        std::lock_guard lock(mutex_);
        return point_;
    }
    [[nodiscard]] bool recorded() const {
        std::lock_guard lock(mutex_);
        return recorded_;
    }
    void record(StreamPoint point) {
        std::lock_guard lock(mutex_);
        point_ = std::move(point);
        recorded_ = true;
    }

private:
    Device& device_;
    const bool timing_;
    const std::shared_ptr<InterprocessEvent> shared_;
    mutable std::mutex mutex_;
    StreamPoint point_;      // guarded by mutex_
    bool recorded_ = false;  // guarded by mutex_
};

}  // namespace keel::level_zero
