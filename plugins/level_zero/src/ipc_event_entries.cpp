// ipc_event_* (keel.h 1.6) over Level Zero's IPC event pools: see
// interprocess_event.hpp for how a record reaches the other process.
#include "entries.hpp"
#include "handles.hpp"
#include "interprocess_event.hpp"

#include <keel/plugin/boundary.hpp>

#include <memory>
#include <string>

namespace keel::level_zero::api {

keel_error* ipc_event_export(keel_event event, keel_ipc_handle* out) noexcept {
    return plugin::entry("level_zero ipc_event_export", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * e, event_from(event));
        KEEL_TRY(plugin::require_non_null(out, "out"));
        if (out->struct_size < KEEL_IPC_HANDLE_STRUCT_SIZE)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "out->struct_size " + std::to_string(out->struct_size) +
                                                           " is smaller than keel_ipc_handle of 1.6");
        if (!e->shared())
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "the event was not created with KEEL_EVENT_INTERPROCESS");
        return e->shared()->export_handle(out);
    });
}

keel_error* ipc_event_import(keel_device device, const keel_ipc_handle* handle, keel_event* out_event) noexcept {
    return plugin::entry("level_zero ipc_event_import", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(handle, "handle"));
        KEEL_TRY(plugin::require_non_null(out_event, "out_event"));
        if (handle->struct_size < KEEL_IPC_HANDLE_STRUCT_SIZE)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "handle->struct_size " + std::to_string(handle->struct_size) +
                                                           " is smaller than keel_ipc_handle of 1.6");
        KEEL_TRY_ASSIGN(std::shared_ptr<InterprocessEvent> shared, InterprocessEvent::open(*d, *handle));
        auto event = std::make_unique<Event>(*d, false, std::move(shared));
        *out_event = to_handle(event.release());
        return ok();
    });
}

}  // namespace keel::level_zero::api
