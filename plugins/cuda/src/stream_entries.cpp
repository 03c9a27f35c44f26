// Streams: creation from a pool, synchronisation, fences, host callbacks.
#include "cuda_error.hpp"
#include "entries.hpp"
#include "handles.hpp"

#include <keel/plugin/boundary.hpp>
#include <keel/plugin/native_handle.hpp>

#include <memory>

namespace keel::cuda::api {

namespace {

// A keel_host_fn (or keel_fallible_host_fn) and its argument, carried
// through CUDA's callback, with the stream's host failure and the call's
// point in it.
struct HostCall {
    keel_host_fn fn = nullptr;
    keel_fallible_host_fn fallible = nullptr;
    void* user_data = nullptr;
    std::shared_ptr<HostFailure> failure;
    std::uint64_t point = 0;
};

// Runs on a CUDA driver thread. cudaStreamAddCallback calls it exactly
// once, with the stream's error if the device failed earlier, which is what
// keel_host_fn promises (cudaLaunchHostFunc would skip it on error, leaking
// whatever the function was meant to release).
void CUDART_CB run_host_call(cudaStream_t, cudaError_t status, void* data) {
    std::unique_ptr<HostCall> call(static_cast<HostCall*>(data));
    Status keel_status = status_from_cuda(status);
    if (keel_status == KEEL_STATUS_OK) keel_status = call->failure->status();
    if (call->fn) {
        call->fn(call->user_data, keel_status);
        return;
    }
    Result<void> r = take_c_error(call->fallible(call->user_data, keel_status));
    if (!r.ok() && keel_status == KEEL_STATUS_OK)
        call->failure->fail(Error(r.error().code(), "[cuda host function] " + r.error().message()), call->point);
}

// Enqueues `call` at the stream's next point.
Result<void> add_host_call(Stream& s, std::unique_ptr<HostCall> call) {
    KEEL_TRY(s.device().make_current());
    call->failure = s.host_failure_ptr();
    auto numbering = s.host_failure().enqueue_lock();
    call->point = s.host_failure().next_point();
    // Ownership passes to run_host_call only if CUDA accepted the callback.
    KEEL_TRY(check_cuda(cudaStreamAddCallback(s.cuda(), &run_host_call, call.get(), 0)));
    (void)call.release();
    return ok();
}

// After a wait on an event recorded behind a host function that may fail:
// the waiting stream takes over that failure when it gets there (keel.h
// 1.3, errors travel with the work that depends on them).
struct WaitedFailure {
    std::shared_ptr<const HostFailure> waited;
    std::uint64_t point;
};
keel_error* take_waited_failure(void* data, keel_status) {
    std::unique_ptr<WaitedFailure> w(static_cast<WaitedFailure*>(data));
    Result<void> r = w->waited->check_before(w->point);
    if (r.ok()) return nullptr;
    return make_c_error(r.error().code(),
                                "waited for an event recorded after a failure: " + r.error().message());
}

}  // namespace

keel_error* stream_create(keel_device device, uint32_t flags, keel_stream* out_stream) noexcept {
    return plugin::entry("cuda stream_create", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(out_stream, "out_stream"));
        if (flags != 0)
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         "flags must be 0 in this ABI version, got " + std::to_string(flags));
        cudaStream_t raw = nullptr;
        if (std::optional<cudaStream_t> pooled = d->idle_streams().take()) {
            raw = *pooled;
        } else {
            KEEL_TRY(d->make_current());
            KEEL_TRY(check_cuda(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking)));
        }
        auto stream = std::make_unique<Stream>(*d, raw);  // on throw, the CUDA stream leaks: OOM only
        *out_stream = to_handle(stream.release());
        return ok();
    });
}

keel_error* stream_destroy(keel_stream handle) noexcept {
    return plugin::entry("cuda stream_destroy", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * raw, stream_from(handle));
        std::unique_ptr<Stream> stream(raw);
        Device& device = stream->device();
        // Best effort: on a thread new to keel, without it CUDA would make
        // device 0's context current for these calls (see ensure_context).
        (void)device.ensure_context();
        stream->scratch().release(stream->cuda());
        const cudaError_t drained = cudaStreamSynchronize(stream->cuda());
        // An idle, healthy stream is as good as new; anything else goes.
        if (drained != cudaSuccess || !device.idle_streams().give(stream->cuda())) {
            if (device.make_current().ok()) (void)cudaStreamDestroy(stream->cuda());
        }
        KEEL_TRY(check_cuda(drained));
        return stream->host_failure().check();
    });
}

keel_error* stream_synchronize(keel_stream handle) noexcept {
    return plugin::entry("cuda stream_synchronize", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, stream_from(handle));
        KEEL_TRY(s->device().ensure_context());
        KEEL_TRY(check_cuda(cudaStreamSynchronize(s->cuda())));
        return s->host_failure().check();
    });
}

// The cudaStream_t every operation of this stream is issued on: work a
// caller issues on it is ordered with keel's, as CUDA orders one stream.
keel_error* stream_native_handle(keel_stream handle, keel_native_handle* out) noexcept {
    return plugin::entry("cuda stream_native_handle", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, stream_from(handle));
        return plugin::write_native_handle(out, KEEL_NATIVE_HANDLE_CUDA_STREAM,
                                           reinterpret_cast<std::uintptr_t>(s->cuda()));
    });
}

keel_error* stream_query(keel_stream handle, int32_t* out_done) noexcept {
    return plugin::entry("cuda stream_query", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, stream_from(handle));
        KEEL_TRY(plugin::require_non_null(out_done, "out_done"));
        KEEL_TRY(s->device().ensure_context());
        const cudaError_t state = cudaStreamQuery(s->cuda());
        if (state == cudaErrorNotReady) {
            *out_done = 0;
            return ok();
        }
        KEEL_TRY(check_cuda(state));
        KEEL_TRY(s->host_failure().check());
        *out_done = 1;
        return ok();
    });
}

keel_error* stream_wait_event(keel_stream stream, keel_event event) noexcept {
    return plugin::entry("cuda stream_wait_event", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, enqueue_stream_from(stream));
        KEEL_TRY_ASSIGN(Event * e, event_from(event));
        if (&e->device() != &s->device())
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "event of " + e->device().label() +
                                                           " waited on by a stream of " +
                                                           s->device().label());
        KEEL_TRY(s->device().ensure_context());
        // An event never recorded is complete in CUDA too: the wait is a no-op.
        KEEL_TRY(check_cuda(cudaStreamWaitEvent(s->cuda(), e->cuda(), cudaEventWaitDefault)));
        auto [waited, point] = e->captured();
        if (!waited || !waited->armed()) return ok();
        s->host_failure().arm();
        auto failed_wait = std::make_unique<WaitedFailure>(WaitedFailure{std::move(waited), point});
        auto call = std::make_unique<HostCall>();
        call->fallible = &take_waited_failure;
        call->user_data = failed_wait.get();
        KEEL_TRY(add_host_call(*s, std::move(call)));
        (void)failed_wait.release();  // take_waited_failure owns it now
        return ok();
    });
}

keel_error* stream_enqueue_host_func(keel_stream stream, keel_host_fn fn, void* user_data) noexcept {
    return plugin::entry("cuda stream_enqueue_host_func", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, enqueue_stream_from(stream));
        if (fn == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "fn is null");
        auto call = std::make_unique<HostCall>();
        call->fn = fn;
        call->user_data = user_data;
        return add_host_call(*s, std::move(call));
    });
}

keel_error* stream_enqueue_fallible_host_func(keel_stream stream, keel_fallible_host_fn fn, void* user_data) noexcept {
    return plugin::entry("cuda stream_enqueue_fallible_host_func", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, enqueue_stream_from(stream));
        if (fn == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "fn is null");
        s->host_failure().arm();
        auto call = std::make_unique<HostCall>();
        call->fallible = fn;
        call->user_data = user_data;
        return add_host_call(*s, std::move(call));
    });
}

}  // namespace keel::cuda::api
