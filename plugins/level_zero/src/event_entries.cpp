// Events: points of a stream (event.hpp), timing by kernel timestamps.
#include "entries.hpp"
#include "handles.hpp"
#include "slot_wait.hpp"

#include <keel/plugin/boundary.hpp>

#include <memory>

namespace keel::level_zero::api {

namespace {

// The stream's error if it taints the work before `point`, else ok().
Result<void> checked(const StreamPoint& point) {
    if (!point.health) return ok();  // never recorded
    return point.health->check_first(point.ops);
}

// 1 when the point passed (or there is none), 0 when pending, or the error:
// a device-fatal answer, or the stream's once the point passed. Never an
// error while the work before the point runs, except for a lost device (a
// caller may free on an error).
Result<int32_t> completion(const StreamPoint& point) {
    if (point.slot) {
        const ze_result_t state = ze().zeEventQueryStatus(point.slot->event);
        if (state == ZE_RESULT_NOT_READY) return 0;
        KEEL_TRY((ZeCall{"zeEventQueryStatus", state}.check()));
    }
    KEEL_TRY(checked(point));
    return 1;
}

// Records an exported (or exportable) event: its point here, and for other
// processes a host task that completes the record when the stream gets there.
Result<void> record_interprocess(Event& e, Stream& s) {
    const std::shared_ptr<InterprocessEvent>& shared = e.shared();
    KEEL_TRY_ASSIGN(const std::uint64_t record, shared->begin_record());
    Result<void> queued = s.enqueue_host([shared, record, health = s.health()](Status status) -> Result<void> {
        if (status == KEEL_STATUS_OK) return shared->complete(record, nullptr);
        // The stream's first error is the one `status` is the code of.
        const Error failure = health->first_error().value_or(Error(status, "(the stream kept no message)"));
        return shared->complete(record, &failure);
    });
    if (!queued.ok()) {
        shared->abandon(record);
        return queued;
    }
    KEEL_TRY_ASSIGN(StreamPoint point, s.point());
    e.record(std::move(point));
    return ok();
}

}  // namespace

keel_error* event_create(keel_device device, uint32_t flags, keel_event* out_event) noexcept {
    return plugin::entry("level_zero event_create", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(out_event, "out_event"));
        if ((flags & ~static_cast<uint32_t>(KEEL_EVENT_TIMING | KEEL_EVENT_INTERPROCESS)) != 0)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "unknown event flags " + std::to_string(flags));
        const bool timing = (flags & KEEL_EVENT_TIMING) != 0;
        if (timing && d->limits().timer_hz == 0)
            return Error(KEEL_STATUS_UNIMPLEMENTED, d->label() + " reports no timer resolution");
        std::shared_ptr<InterprocessEvent> shared;
        if ((flags & KEEL_EVENT_INTERPROCESS) != 0) {
            if ((d->properties().capabilities & KEEL_DEVICE_CAP_IPC_EVENTS) == 0)
                return Error(KEEL_STATUS_INVALID_ARGUMENT,
                             "KEEL_EVENT_INTERPROCESS on " + d->label() + ", which shares no events between processes");
            if (timing)
                return Error(KEEL_STATUS_INVALID_ARGUMENT,
                             "KEEL_EVENT_INTERPROCESS with KEEL_EVENT_TIMING: an interprocess event has no timing");
            KEEL_TRY_ASSIGN(shared, InterprocessEvent::create(*d));
        }
        auto event = std::make_unique<Event>(*d, timing, std::move(shared));
        *out_event = to_handle(event.release());
        return ok();
    });
}

keel_error* event_destroy(keel_event handle) noexcept {
    return plugin::entry("level_zero event_destroy", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * raw, event_from(handle));
        // A pending record completes harmlessly: the stream and every wait
        // on it hold their own references to its slot.
        std::unique_ptr<Event> event(raw);
        return ok();
    });
}

keel_error* event_record(keel_event event, keel_stream stream) noexcept {
    return plugin::entry("level_zero event_record", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * e, event_from(event));
        KEEL_TRY_ASSIGN(Stream * s, stream_from(stream));
        if (&e->device() != &s->device())
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "event of " + e->device().label() +
                                                           " recorded on a stream of " + s->device().label());
        if (e->imported())
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "an imported event: only its exporter records it");
        if (e->shared()) return record_interprocess(*e, *s);
        if (!e->timing()) {
            KEEL_TRY_ASSIGN(StreamPoint point, s->point());
            e->record(std::move(point));
            return ok();
        }
        // The device timestamps the point when the stream gets there.
        KEEL_TRY_ASSIGN(StreamPoint point, s->mark_time());
        e->record(std::move(point));
        return ok();
    });
}

keel_error* event_query(keel_event event, int32_t* out_done) noexcept {
    return plugin::entry("level_zero event_query", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * e, event_from(event));
        KEEL_TRY(plugin::require_non_null(out_done, "out_done"));
        if (e->imported()) {
            KEEL_TRY_ASSIGN(const bool done, e->shared()->query());
            *out_done = done ? 1 : 0;
            return ok();
        }
        KEEL_TRY_ASSIGN(*out_done, completion(e->point()));
        return ok();
    });
}

keel_error* event_synchronize(keel_event event) noexcept {
    return plugin::entry("level_zero event_synchronize", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * e, event_from(event));
        if (e->imported()) return e->shared()->wait();
        const StreamPoint point = e->point();
        if (point.slot) {
            SlotWait waited = wait_for_slot(*point.slot);
            if (waited.error) return std::move(*waited.error);
        }
        return checked(point);
    });
}

keel_error* event_elapsed_time(keel_event start, keel_event end, float* out_ms) noexcept {
    return plugin::entry("level_zero event_elapsed_time", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * a, event_from(start, "start"));
        KEEL_TRY_ASSIGN(Event * b, event_from(end, "end"));
        KEEL_TRY(plugin::require_non_null(out_ms, "out_ms"));
        if (a->imported() || b->imported())
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         std::string(a->imported() ? "start" : "end") + " is an imported event: it has no timing");
        if (!a->timing() || !b->timing())
            return Error(KEEL_STATUS_FAILED_PRECONDITION,
                         std::string(!a->timing() ? "start" : "end") + " was not created with KEEL_EVENT_TIMING");
        if (!a->recorded() || !b->recorded())
            return Error(KEEL_STATUS_FAILED_PRECONDITION,
                         std::string(!a->recorded() ? "start" : "end") + " was never recorded");
        if (&a->device() != &b->device())
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         "start is on " + a->device().label() + ", end on " + b->device().label());
        const StreamPoint pa = a->point(), pb = b->point();
        KEEL_TRY_ASSIGN(const int32_t a_done, completion(pa));
        KEEL_TRY_ASSIGN(const int32_t b_done, completion(pb));
        if (!a_done || !b_done)
            return Error(KEEL_STATUS_FAILED_PRECONDITION,
                         std::string(!a_done ? "start" : "end") + " has not completed yet");
        // Timing records always enqueue a marker: both points exist. Each
        // marker's end is when everything before it had completed.
        ze_kernel_timestamp_result_t ta{}, tb{};
        KEEL_TRY(KEEL_ZE(zeEventQueryKernelTimestamp, pa.slot->event, &ta).check("start"));
        KEEL_TRY(KEEL_ZE(zeEventQueryKernelTimestamp, pb.slot->event, &tb).check("end"));
        const DeviceLimits& limits = a->device().limits();
        const std::uint64_t mask = limits.kernel_timestamp_mask;
        const std::uint64_t ticks = (tb.global.kernelEnd - ta.global.kernelEnd) & mask;
        // Ticks beyond half the counter's range mean end came before start.
        const double signed_ticks =
            ticks > mask / 2 ? -static_cast<double>((mask - ticks) + 1) : static_cast<double>(ticks);
        *out_ms = static_cast<float>(signed_ticks * 1000.0 / static_cast<double>(limits.timer_hz));
        return ok();
    });
}

}  // namespace keel::level_zero::api
