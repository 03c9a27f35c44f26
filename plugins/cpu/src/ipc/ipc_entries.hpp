// The 1.6 IPC entries of the table (ipc_entries.cpp), and what the event
// entries (event.cpp) ask of interprocess events.
#pragma once

#include <keel/keel.h>
#include <keel/result.hpp>

namespace keel::cpu {

class Event;
class Stream;

namespace entries {
keel_error* ipc_memory_alloc(keel_device device, uint64_t size, keel_device_addr* out_addr);
keel_error* ipc_memory_export(keel_device device, keel_device_addr addr, keel_ipc_handle* out);
keel_error* ipc_memory_import(keel_device device, const keel_ipc_handle* handle, keel_device_addr* out_addr);
keel_error* ipc_memory_close(keel_device device, keel_device_addr addr);
keel_error* ipc_event_export(keel_event event, keel_ipc_handle* out);
keel_error* ipc_event_import(keel_device device, const keel_ipc_handle* handle, keel_event* out_event);
}  // namespace entries

namespace ipc {
// event_create with KEEL_EVENT_INTERPROCESS: gives `e` its shared state.
[[nodiscard]] Result<void> make_interprocess(Event& e, std::uint32_t flags);
[[nodiscard]] bool is_imported(const Event& e) noexcept;
// event_record, after the local record of an exported event: publishes it.
[[nodiscard]] Result<void> after_record(Event& e);
// The imported event's side of stream_wait_event, event_query, event_synchronize.
[[nodiscard]] Result<void> wait_imported(Stream& s, Event& e);
[[nodiscard]] Result<bool> query_imported(Event& e);
[[nodiscard]] Result<void> synchronize_imported(Event& e);
}  // namespace ipc
}  // namespace keel::cpu
