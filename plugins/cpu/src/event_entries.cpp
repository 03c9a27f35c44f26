// Events, and the entries that order work with them (record, wait, query,
// synchronize, elapsed time).
#include "event.hpp"

#include "checker/checker.hpp"
#include "device.hpp"
#include "handle.hpp"
#include "entries.hpp"
#include "stream.hpp"
#include "ipc/ipc_entries.hpp"

#include <keel/plugin/boundary.hpp>

#include <atomic>
#include <mutex>

namespace keel::cpu {

Result<Event*> Event::from(keel_event e) {
    auto* event = reinterpret_cast<Event*>(e);
    if (event == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "event is null");
    if (!looks_like<Event>(event, kMagic)) return Error(KEEL_STATUS_INVALID_ARGUMENT, "not a cpu event handle");
    return event;
}

void Event::set(Record r) {
    std::lock_guard lock(lock_);
    latest_ = std::move(r);
}

Event::Record Event::get() const {
    std::lock_guard lock(lock_);
    return latest_;
}

namespace {

Result<void> point_error(const TimelinePoint& p) {
    if (const Error* e = p.error())
        return Error(e->code(), "recorded on stream " + std::to_string(p.timeline->stream_id()) +
                                    " after it failed: " + e->message());
    return ok();
}

}  // namespace

Result<std::int64_t> Event::completed_ns() const {
    std::lock_guard lock(lock_);
    if (!latest_.timing) return Error(KEEL_STATUS_FAILED_PRECONDITION, "both events must have been recorded");
    if (!latest_.point.done()) return Error(KEEL_STATUS_FAILED_PRECONDITION, "an event has not completed yet");
    KEEL_TRY(point_error(latest_.point));
    return latest_.timing->steady_ns.load(std::memory_order_acquire);
}

std::shared_ptr<TimingSlot> Event::reusable_slot() {
    {
        std::lock_guard lock(lock_);
        // One owner: the op that wrote it is gone, and readers copy only under this lock.
        if (latest_.timing && latest_.timing.use_count() == 1) {
            // After the op's last use of it (its release of the count).
            std::atomic_thread_fence(std::memory_order_acquire);
            std::shared_ptr<TimingSlot> slot = std::move(latest_.timing);
            slot->steady_ns.store(0, std::memory_order_relaxed);
            return slot;
        }
    }
    return std::make_shared<TimingSlot>();
}

namespace {

// Checker mode: the record and the clock it captures are taken under the
// checker's lock, so that no op enqueued on `s` meanwhile slips in between.
Result<void> record_checked(Checker& checker, Event& e, Stream& s) {
    Op scratch;
    std::shared_ptr<TimingSlot> slot;
    if (e.timing()) {
        KEEL_TRY(s.prepare_enqueue());
        slot = std::make_shared<TimingSlot>();
        scratch.kind = OpKind::timestamp;
        scratch.timing = slot;
    }
    auto lock = checker.lock();
    KEEL_TRY(s.check_usable());
    Event::Record r{s.current_point(), nullptr, nullptr};
    if (slot) {
        KEEL_TRY_ASSIGN(std::uint64_t position, checker.admit(lock, s, scratch));
        r = {TimelinePoint{s.timeline(), position}, std::move(slot), nullptr};
    }
    r.clock = checker.clock_of(lock, s);
    e.set(std::move(r));
    return ok();
}

// True when a wait for `r` on `s` needs no op: never recorded, already
// reached, or recorded earlier on this very stream.
// A point after a failure is never satisfied: the wait op carries the
// error to the waiting stream.
bool wait_satisfied(const Event::Record& r, const Stream& s) {
    return (r.point.done() && r.point.error() == nullptr) || r.point.timeline == s.timeline();
}

// Checker mode: the stream's clock joins the event's under the checker's
// lock, whether or not a wait op is needed (the ordering is the same).
Result<void> wait_checked(Checker& checker, Stream& s, Event& e) {
    KEEL_TRY(s.prepare_enqueue());
    auto lock = checker.lock();
    KEEL_TRY(s.check_usable());
    Event::Record r = e.get();
    checker.wait(lock, s, r.clock);
    // Enqueued even when already reached, so that positions (and the
    // checker's messages) do not depend on timing.
    if (!r.point.timeline || r.point.timeline == s.timeline()) return ok();
    Op scratch;
    scratch.kind = OpKind::wait;
    scratch.wait_for = std::move(r.point);
    KEEL_TRY(checker.admit(lock, s, scratch));
    return ok();
}

}  // namespace

namespace entries {

keel_error* event_create(keel_device device, uint32_t flags, keel_event* out_event) {
    return plugin::entry("cpu event_create", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, Device::from(device));
        KEEL_TRY(plugin::require_non_null(out_event, "out_event"));
        if ((flags & ~static_cast<uint32_t>(KEEL_EVENT_TIMING | KEEL_EVENT_INTERPROCESS)) != 0)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "unknown flags " + std::to_string(flags));
        KEEL_TRY_ASSIGN(Event * e, d->create_event(flags & KEEL_EVENT_TIMING));
        if (Result<void> shared = ipc::make_interprocess(*e, flags); !shared.ok()) {
            d->destroy_event(e);
            return shared;
        }
        *out_event = e->handle();
        return ok();
    });
}

keel_error* event_destroy(keel_event event) {
    return plugin::entry("cpu event_destroy", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * e, Event::from(event));
        e->device().destroy_event(e);
        return ok();
    });
}

keel_error* event_record(keel_event event, keel_stream stream) {
    return plugin::entry("cpu event_record", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * e, Event::from(event));
        KEEL_TRY_ASSIGN(Stream * s, Stream::from(stream));
        if (&e->device() != &s->device())
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "event and stream belong to different devices");
        if (e->shared) [[unlikely]] {
            if (ipc::is_imported(*e))
                return Error(KEEL_STATUS_INVALID_ARGUMENT, "an imported event: only its exporter records it");
            if (Checker* checker = s->device().checker()) KEEL_TRY(record_checked(*checker, *e, *s));
            else {
                KEEL_TRY(s->check_usable());
                e->set({s->current_point(), nullptr, nullptr});
            }
            return ipc::after_record(*e);
        }
        if (Checker* checker = s->device().checker()) [[unlikely]]
            return record_checked(*checker, *e, *s);
        if (!e->timing()) {
            KEEL_TRY(s->check_usable());
            e->set({s->current_point(), nullptr, nullptr});
            return ok();
        }
        std::shared_ptr<TimingSlot> slot = e->reusable_slot();
        KEEL_TRY_ASSIGN(std::uint64_t position, s->enqueue([&](Op& op) {
            op.kind = OpKind::timestamp;
            op.timing = slot;
        }));
        e->set({TimelinePoint{s->timeline(), position}, std::move(slot), nullptr});
        return ok();
    });
}

keel_error* event_query(keel_event event, int32_t* out_done) {
    return plugin::entry("cpu event_query", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * e, Event::from(event));
        KEEL_TRY(plugin::require_non_null(out_done, "out_done"));
        if (ipc::is_imported(*e)) [[unlikely]] {
            KEEL_TRY_ASSIGN(bool done, ipc::query_imported(*e));
            *out_done = done ? 1 : 0;
            return ok();
        }
        const Event::Record r = e->get();
        // A lazy stream (checker mode) runs the work a query asks about.
        if (r.point.timeline) r.point.timeline->demand(r.point.position);
        const bool done = r.point.done();
        KEEL_TRY(point_error(r.point));
        if (done && r.clock) e->device().checker()->host_learns(r.clock);
        *out_done = done ? 1 : 0;
        return ok();
    });
}

keel_error* event_synchronize(keel_event event) {
    return plugin::entry("cpu event_synchronize", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * e, Event::from(event));
        if (ipc::is_imported(*e)) [[unlikely]] return ipc::synchronize_imported(*e);
        const Event::Record r = e->get();
        if (r.point.timeline) r.point.timeline->wait_for(r.point.position);
        if (r.clock) e->device().checker()->host_learns(r.clock);
        return point_error(r.point);
    });
}

keel_error* event_elapsed_time(keel_event start, keel_event end, float* out_ms) {
    return plugin::entry("cpu event_elapsed_time", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * a, Event::from(start));
        KEEL_TRY_ASSIGN(Event * b, Event::from(end));
        KEEL_TRY(plugin::require_non_null(out_ms, "out_ms"));
        if (!a->timing() || !b->timing())
            return Error(KEEL_STATUS_FAILED_PRECONDITION, "both events must be created with KEEL_EVENT_TIMING");
        Result<std::int64_t> ta = a->completed_ns();
        Result<std::int64_t> tb = b->completed_ns();
        // "Not yet" before a failure, as a stream reports them.
        for (Result<std::int64_t>* t : {&ta, &tb})
            if (!t->ok() && t->error().code() == KEEL_STATUS_FAILED_PRECONDITION) return t->error();
        if (!ta.ok()) return ta.error();
        if (!tb.ok()) return tb.error();
        const std::int64_t ns = *tb - *ta;
        *out_ms = static_cast<float>(static_cast<double>(ns) / 1e6);
        return ok();
    });
}

keel_error* stream_wait_event(keel_stream stream, keel_event event) {
    return plugin::entry("cpu stream_wait_event", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, Stream::from(stream));
        KEEL_TRY_ASSIGN(Event * e, Event::from(event));
        // An event of another device of this plugin is waited for like one
        // of this device (KEEL_DEVICE_CAP_PEER_EVENT_WAIT): every device's
        // timelines are in this process, and the checker orders all of them.
        if (ipc::is_imported(*e)) [[unlikely]] return ipc::wait_imported(*s, *e);
        if (Checker* checker = s->device().checker()) [[unlikely]]
            return wait_checked(*checker, *s, *e);
        KEEL_TRY(s->check_usable());
        Event::Record r = e->get();
        if (wait_satisfied(r, *s)) return ok();
        KEEL_TRY(s->enqueue([&](Op& op) {
            op.kind = OpKind::wait;
            op.wait_for = std::move(r.point);
        }));
        return ok();
    });
}

}  // namespace entries
}  // namespace keel::cpu
