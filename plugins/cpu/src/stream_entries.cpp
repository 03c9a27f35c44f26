// Stream entries: create/destroy/synchronize/query and host callbacks.
#include "device.hpp"
#include "entries.hpp"
#include "stream.hpp"

#include <keel/plugin/boundary.hpp>

namespace keel::cpu::entries {

keel_error* stream_create(keel_device device, uint32_t flags, keel_stream* out_stream) {
    return plugin::entry("cpu stream_create", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, Device::from(device));
        KEEL_TRY(plugin::require_non_null(out_stream, "out_stream"));
        if (flags != 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, "flags must be 0, got " + std::to_string(flags));
        KEEL_TRY_ASSIGN(Stream * s, d->create_stream());
        *out_stream = s->handle();
        return ok();
    });
}

keel_error* stream_destroy(keel_stream stream) {
    return plugin::entry("cpu stream_destroy", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, Stream::from(stream));
        return s->device().destroy_stream(s);
    });
}

keel_error* stream_synchronize(keel_stream stream) {
    return plugin::entry("cpu stream_synchronize", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, Stream::from(stream));
        return s->synchronize();
    });
}

keel_error* stream_query(keel_stream stream, int32_t* out_done) {
    return plugin::entry("cpu stream_query", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, Stream::from(stream));
        KEEL_TRY(plugin::require_non_null(out_done, "out_done"));
        KEEL_TRY_ASSIGN(bool done, s->query());
        *out_done = done ? 1 : 0;
        return ok();
    });
}

namespace {
// A host function (`fallible` null) or one whose error fails the stream at
// its point, as a failed copy would (Stream::process makes it the stream's
// sticky error).
Result<void> enqueue_host_function(keel_stream stream, keel_host_fn fn, keel_fallible_host_fn fallible,
                                   void* user_data) {
    KEEL_TRY_ASSIGN(Stream * s, Stream::from(stream));
    if (fn == nullptr && fallible == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "fn is null");
    KEEL_TRY(s->enqueue([&](Op& op) {
        op.kind = OpKind::host_func;
        op.fn = fn;
        op.fallible_fn = fallible;
        op.user_data = user_data;
    }));
    return ok();
}
}  // namespace

keel_error* stream_enqueue_host_func(keel_stream stream, keel_host_fn fn, void* user_data) {
    return plugin::entry("cpu stream_enqueue_host_func",
                         [&] { return enqueue_host_function(stream, fn, nullptr, user_data); });
}

keel_error* stream_enqueue_fallible_host_func(keel_stream stream, keel_fallible_host_fn fn, void* user_data) {
    return plugin::entry("cpu stream_enqueue_fallible_host_func",
                         [&] { return enqueue_host_function(stream, nullptr, fn, user_data); });
}

}  // namespace keel::cpu::entries
