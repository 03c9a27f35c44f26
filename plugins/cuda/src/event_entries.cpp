// Events: pooled CUDA events, without timing unless it is asked for.
#include "cuda_error.hpp"
#include "entries.hpp"
#include "handles.hpp"

#include <keel/plugin/boundary.hpp>

#include <memory>

namespace keel::cuda::api {

namespace {

// 1 when complete, 0 when pending, or the error CUDA reports.
Result<int32_t> completion(cudaError_t state) {
    if (state == cudaErrorNotReady) return 0;
    KEEL_TRY(check_cuda(state));
    return 1;
}

}  // namespace

keel_error* event_create(keel_device device, uint32_t flags, keel_event* out_event) noexcept {
    return plugin::entry("cuda event_create", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(out_event, "out_event"));
        if ((flags & ~static_cast<uint32_t>(KEEL_EVENT_TIMING | KEEL_EVENT_INTERPROCESS)) != 0)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "unknown event flags " + std::to_string(flags));
        const bool timing = (flags & KEEL_EVENT_TIMING) != 0;
        if ((flags & KEEL_EVENT_INTERPROCESS) != 0) {
            // CUDA's interprocess events have no timing, and are never pooled.
            if (timing)
                return Error(KEEL_STATUS_INVALID_ARGUMENT, "an interprocess event has no timing (KEEL_EVENT_TIMING)");
            KEEL_TRY(d->make_current());
            cudaEvent_t shared = nullptr;
            KEEL_TRY(check_cuda(cudaEventCreateWithFlags(&shared, cudaEventInterprocess | cudaEventDisableTiming)));
            *out_event = to_handle(std::make_unique<Event>(*d, shared, false, Event::Sharing::exported).release());
            return ok();
        }
        cudaEvent_t raw = nullptr;
        if (std::optional<cudaEvent_t> pooled = d->idle_events(timing).take()) {
            raw = *pooled;
        } else {
            KEEL_TRY(d->make_current());
            // Timing costs a timestamp write at every record; skip it unless asked.
            KEEL_TRY(check_cuda(
                cudaEventCreateWithFlags(&raw, timing ? cudaEventDefault : cudaEventDisableTiming)));
        }
        auto event = std::make_unique<Event>(*d, raw, timing);
        *out_event = to_handle(event.release());
        return ok();
    });
}

keel_error* event_destroy(keel_event handle) noexcept {
    return plugin::entry("cuda event_destroy", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * raw, event_from(handle));
        std::unique_ptr<Event> event(raw);
        Device& device = event->device();
        (void)device.ensure_context();  // best effort, as in stream_destroy
        // Only an event whose last record completed may be reused: the next
        // owner must see it as complete until it records it. A pending one
        // is destroyed; CUDA lets its record (and waits on it) finish.
        if (event->sharing() == Event::Sharing::none && cudaEventQuery(event->cuda()) == cudaSuccess &&
            device.idle_events(event->timing()).give(event->cuda()))
            return ok();
        KEEL_TRY(device.make_current());
        return check_cuda(cudaEventDestroy(event->cuda()));
    });
}

keel_error* event_record(keel_event event, keel_stream stream) noexcept {
    return plugin::entry("cuda event_record", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * e, event_from(event));
        KEEL_TRY_ASSIGN(Stream * s, enqueue_stream_from(stream));
        if (e->sharing() == Event::Sharing::imported)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "an imported event: only its exporter records it");
        if (&e->device() != &s->device())
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "event of " + e->device().label() +
                                                           " recorded on a stream of " +
                                                           s->device().label());
        KEEL_TRY(s->device().ensure_context());
        {
            auto numbering = s->host_failure().enqueue_lock();
            KEEL_TRY(check_cuda(cudaEventRecord(e->cuda(), s->cuda())));
            e->capture(s->host_failure_ptr(), s->host_failure().next_point());
        }
        e->mark_recorded();
        return ok();
    });
}

keel_error* event_query(keel_event event, int32_t* out_done) noexcept {
    return plugin::entry("cuda event_query", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * e, event_from(event));
        KEEL_TRY(plugin::require_non_null(out_done, "out_done"));
        KEEL_TRY(e->device().ensure_context());
        KEEL_TRY_ASSIGN(const int32_t done, completion(cudaEventQuery(e->cuda())));
        if (done) KEEL_TRY(e->host_failure());
        *out_done = done;
        return ok();
    });
}

keel_error* event_synchronize(keel_event event) noexcept {
    return plugin::entry("cuda event_synchronize", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * e, event_from(event));
        KEEL_TRY(e->device().ensure_context());
        KEEL_TRY(check_cuda(cudaEventSynchronize(e->cuda())));
        return e->host_failure();
    });
}

keel_error* event_elapsed_time(keel_event start, keel_event end, float* out_ms) noexcept {
    return plugin::entry("cuda event_elapsed_time", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * a, event_from(start, "start"));
        KEEL_TRY_ASSIGN(Event * b, event_from(end, "end"));
        KEEL_TRY(plugin::require_non_null(out_ms, "out_ms"));
        if (!a->timing() || !b->timing())
            return Error(KEEL_STATUS_FAILED_PRECONDITION,
                         std::string(!a->timing() ? "start" : "end") +
                             " was not created with KEEL_EVENT_TIMING");
        if (!a->recorded() || !b->recorded())
            return Error(KEEL_STATUS_FAILED_PRECONDITION,
                         std::string(!a->recorded() ? "start" : "end") + " was never recorded");
        if (&a->device() != &b->device())
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "start is on " + a->device().label() +
                                                           ", end on " + b->device().label());
        KEEL_TRY(a->device().ensure_context());
        float ms = 0.0f;
        const cudaError_t measured = cudaEventElapsedTime(&ms, a->cuda(), b->cuda());
        if (measured == cudaErrorNotReady)
            return Error(KEEL_STATUS_FAILED_PRECONDITION,
                         "an event has not completed yet: " + describe_cuda(measured));
        KEEL_TRY(check_cuda(measured));
        *out_ms = ms;
        return ok();
    });
}

}  // namespace keel::cuda::api
