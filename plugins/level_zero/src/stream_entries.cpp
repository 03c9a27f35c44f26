// Streams: creation, synchronisation, fences, host functions.
#include "entries.hpp"
#include "handles.hpp"

#include <keel/plugin/boundary.hpp>
#include <keel/plugin/native_handle.hpp>

#include <memory>

namespace keel::level_zero::api {

keel_error* stream_create(keel_device device, uint32_t flags, keel_stream* out_stream) noexcept {
    return plugin::entry("level_zero stream_create", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(out_stream, "out_stream"));
        if (flags != 0)
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         "flags must be 0 in this ABI version, got " + std::to_string(flags));
        KEEL_TRY_ASSIGN(std::unique_ptr<Stream> stream, Stream::create(*d));
        *out_stream = to_handle(stream.release());
        return ok();
    });
}

keel_error* stream_destroy(keel_stream handle) noexcept {
    return plugin::entry("level_zero stream_destroy", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * raw, stream_from(handle));
        std::unique_ptr<Stream> stream(raw);
        return stream->close();  // released either way
    });
}

keel_error* stream_synchronize(keel_stream handle) noexcept {
    return plugin::entry("level_zero stream_synchronize", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, stream_from(handle));
        return s->synchronize();
    });
}

keel_error* stream_native_handle(keel_stream handle, keel_native_handle* out) noexcept {
    return plugin::entry("level_zero stream_native_handle", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, stream_from(handle));
        const ze_command_list_handle_t list = s->native_list();
        if (list == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "the stream is closed");
        return plugin::write_native_handle(out, KEEL_NATIVE_HANDLE_LEVEL_ZERO_COMMAND_LIST,
                                           reinterpret_cast<std::uintptr_t>(list));
    });
}

keel_error* stream_query(keel_stream handle, int32_t* out_done) noexcept {
    return plugin::entry("level_zero stream_query", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, stream_from(handle));
        KEEL_TRY(plugin::require_non_null(out_done, "out_done"));
        KEEL_TRY_ASSIGN(const bool done, s->query());
        *out_done = done ? 1 : 0;
        return ok();
    });
}

namespace {
// A wait for another process's record: nothing when it completed already,
// else the stream's host worker waits for it on the host (where a dead
// exporter is seen, and its failure becomes this stream's).
Result<void> wait_imported(Stream& s, const std::shared_ptr<InterprocessEvent>& shared) {
    Result<bool> now = shared->query();
    if (now.ok() && now.value()) return ok();
    return s.enqueue_host([shared](Status status) -> Result<void> {
        if (status != KEEL_STATUS_OK) return ok();  // failed already: it keeps its first error
        return shared->wait();
    });
}
}  // namespace

keel_error* stream_wait_event(keel_stream stream, keel_event event) noexcept {
    return plugin::entry("level_zero stream_wait_event", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, stream_from(stream));
        KEEL_TRY_ASSIGN(Event * e, event_from(event));
        if (&e->device() != &s->device())
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "event of " + e->device().label() +
                                                           " waited on by a stream of " + s->device().label());
        if (e->imported()) return wait_imported(*s, e->shared());
        // Errors travel along the wait (keel.h 1.3): see StreamHealth.
        return s->wait(e->point());
    });
}

namespace {
// Runs exactly once on the stream's host worker, with the stream's error if
// it failed earlier. A fallible function's error fails the stream from this
// task on (the host worker keeps the first error).
Result<void> enqueue_host_function(keel_stream stream, keel_host_fn fn, keel_fallible_host_fn fallible,
                                   void* user_data) {
    KEEL_TRY_ASSIGN(Stream * s, stream_from(stream));
    if (fn == nullptr && fallible == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "fn is null");
    return s->enqueue_host([fn, fallible, user_data](Status status) -> Result<void> {
        if (fn != nullptr) {
            fn(user_data, status);
            return ok();
        }
        Result<void> r = take_c_error(fallible(user_data, status));
        if (r.ok()) return r;
        return Error(r.error().code(), "[level_zero host function] " + r.error().message());
    });
}
}  // namespace

keel_error* stream_enqueue_host_func(keel_stream stream, keel_host_fn fn, void* user_data) noexcept {
    return plugin::entry("level_zero stream_enqueue_host_func",
                         [&] { return enqueue_host_function(stream, fn, nullptr, user_data); });
}

keel_error* stream_enqueue_fallible_host_func(keel_stream stream, keel_fallible_host_fn fn, void* user_data) noexcept {
    return plugin::entry("level_zero stream_enqueue_fallible_host_func",
                         [&] { return enqueue_host_function(stream, nullptr, fn, user_data); });
}

}  // namespace keel::level_zero::api
