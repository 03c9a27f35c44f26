// An event: the most recent point recorded on some stream's timeline.
//
// Recording a KEEL_EVENT_DEFAULT event enqueues nothing: it captures the
// stream's current position (work enqueued so far), and the event is
// complete when that stream's timeline reaches it. A KEEL_EVENT_TIMING
// record enqueues a timestamp op so the completion time can be read.
// Waits copy the point, so re-recording or destroying the event never
// affects a wait already enqueued, and a point keeps its Timeline alive.
//
// Thread-safety: any thread; the point is guarded by a spin lock (a record
// and a query may race from different threads).
#pragma once

#include "op.hpp"
#include "park.hpp"
#include "sharded_owners.hpp"
#include "timeline.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstdint>
#include <memory>

namespace keel::cpu {

class Device;
class VectorClock;
namespace ipc {
class SharedEvent;
}

class Event {
public:
    static constexpr std::uint32_t kMagic = 0x4B45564E;  // "KEVN"

    Event(Device& device, std::uint32_t flags) : device_(device), flags_(flags) {}
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    Event(Event&&) = delete;
    Event& operator=(Event&&) = delete;
    ~Event() { magic_ = 0; }

    [[nodiscard]] keel_event handle() noexcept { return reinterpret_cast<keel_event>(this); }
    [[nodiscard]] static Result<Event*> from(keel_event e);

    [[nodiscard]] Device& device() noexcept { return device_; }
    [[nodiscard]] bool timing() const noexcept { return (flags_ & KEEL_EVENT_TIMING) != 0; }

    struct Record {
        TimelinePoint point;
        std::shared_ptr<TimingSlot> timing;        // TIMING events only
        std::shared_ptr<const VectorClock> clock;  // checker mode: what the record is ordered after
    };
    void set(Record r);
    [[nodiscard]] Record get() const;
    // A TIMING record's time, read in place (no copy of the record):
    // FAILED_PRECONDITION while not recorded or not complete, the stream's
    // error when it failed at or before the record.
    [[nodiscard]] Result<std::int64_t> completed_ns() const;
    // The timing slot of the last record, for the next record to reuse when
    // nothing else holds it (its op ran and no reader copied it); else a new one.
    [[nodiscard]] std::shared_ptr<TimingSlot> reusable_slot();

private:
    std::uint32_t magic_ = kMagic;
    Device& device_;
    const std::uint32_t flags_;
    mutable SpinLock lock_;
    Record latest_;

public:
    // The device's, between create and destroy (ShardedOwners). After the
    // magic, which must stay the first member (handle.hpp).
    OwnerSlot slot;
    // Interprocess events (keel.h 1.6): the state other processes share;
    // null for a process-local event. Set once, before the handle is given out.
    std::shared_ptr<ipc::SharedEvent> shared;
};

}  // namespace keel::cpu
