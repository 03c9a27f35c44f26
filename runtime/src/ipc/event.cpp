// Interprocess events: made here, exported, and imported as keel::Event.
#include <keel/ipc.hpp>

#include "../access.hpp"
#include "entry_call.hpp"

namespace keel::ipc {

using keel::detail::Access;

Result<Event> create_event(const Device& device) {
    const auto& slot = Access::slot(device);
    if (slot.api().abi_minor() < 6 || !device.has(DeviceCapability::ipc_events))
        return Error(KEEL_STATUS_UNIMPLEMENTED, "[ipc::create_event] " + device.name() +
                                                    " does not share events between processes");
    keel_event handle = nullptr;
    KEEL_TRY(slot.api().event_create(slot.handle, KEEL_EVENT_INTERPROCESS, &handle));
    return Access::event(&slot, handle, slot.plugin->shares().take(), EventTiming::off);
}

Result<Handle> export_event(const Event& event) {
    if (event.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[ipc::export_event] the event is empty (moved-from)");
    const auto& slot = *Access::slot(event);
    keel_ipc_handle out = Handle().c_handle();
    KEEL_TRY(detail::call_entry(slot, slot.api().table().ipc_event_export, "ipc_event_export", Access::handle(event),
                                &out));
    Handle h = Handle::adopt(out);
    if (h.kind() != KEEL_IPC_HANDLE_EVENT)
        return Error(KEEL_STATUS_INTERNAL, "[ipc::export_event] " + slot.name + " made a handle of kind " +
                                               std::to_string(h.kind()) + ", not EVENT");
    return h;
}

Result<Event> import_event(const Device& device, const Handle& handle) {
    if (handle.kind() != KEEL_IPC_HANDLE_EVENT)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[ipc::import_event] the handle is not of an exported event (kind " +
                                                       std::to_string(handle.kind()) + ")");
    const auto& slot = Access::slot(device);
    keel_event out = nullptr;
    KEEL_TRY(detail::call_entry(slot, slot.api().table().ipc_event_import, "ipc_event_import", slot.handle,
                                &handle.c_handle(), &out));
    return Access::event(&slot, out, slot.plugin->shares().take(), EventTiming::off);
}

}  // namespace keel::ipc
