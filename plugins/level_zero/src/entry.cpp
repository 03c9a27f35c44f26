// The plugin's one exported symbol and its table: the entries of
// plugin::DevicePlugin (plugin_state.hpp) and this plugin's own (entries.hpp).
#include "entries.hpp"
#include "plugin_state.hpp"

#include <keel/keel.h>

namespace keel::level_zero::api {

namespace {

// device_memory_info is absent: Level Zero 1.4's core API reports no free
// memory (only Sysman does, and only when ZES_ENABLE_SYSMAN=1 was set
// before zeInit, which a plugin cannot impose on its process).
// Every entry of keel.h in table order, each set or null here, so that what
// this plugin lacks is read in one place (the other GPU plugin's table has
// the same shape and its own entries).
// `ipc`: with the ipc_memory_* entries, for drivers that share memory
// between processes (the device then sets KEEL_DEVICE_CAP_IPC_MEMORY);
// `ipc_events`: with ipc_event_*, for drivers that share event pools
// (KEEL_DEVICE_CAP_IPC_EVENTS).
constexpr keel_plugin_api make_api(bool ipc, bool ipc_events) {
    return {
        .struct_size = KEEL_PLUGIN_API_STRUCT_SIZE,
        .abi_major = KEEL_ABI_VERSION_MAJOR,
        .abi_minor = KEEL_ABI_VERSION_MINOR,
        .plugin_info = &Plugin::plugin_info,
        .plugin_shutdown = &Plugin::plugin_shutdown,
        .device_count = &Plugin::device_count,
        .device_get = &Plugin::device_get,
        .device_properties = &Plugin::device_properties,
        .stream_create = &stream_create,
        .stream_destroy = &stream_destroy,
        .stream_synchronize = &stream_synchronize,
        .stream_query = &stream_query,
        .stream_wait_event = &stream_wait_event,
        .stream_enqueue_host_func = &stream_enqueue_host_func,
        .event_create = &event_create,
        .event_destroy = &event_destroy,
        .event_record = &event_record,
        .event_query = &event_query,
        .event_synchronize = &event_synchronize,
        .device_alloc = &device_alloc,
        .device_free = &device_free,
        .memcpy_h2d = &memcpy_h2d,
        .memcpy_d2h = &memcpy_d2h,
        .memcpy_d2d = &memcpy_d2d,
        .memset_d8 = &memset_d8,
        .device_memory_info = nullptr,
        .host_alloc = &host_alloc,
        .host_free = &host_free,
        .event_elapsed_time = &event_elapsed_time,
        .kernel_get = &kernel_get,
        .kernel_launch = &kernel_launch,
        .memcpy_h2d_inline = &memcpy_h2d_inline,
        .device_native_handle = &device_native_handle,
        .stream_native_handle = &stream_native_handle,
        .device_pageable_staging_stats = &Plugin::device_pageable_staging_stats,
        .stream_annotate_range = nullptr,  // no checker to tell
        // No native communication: keel::Communicator's generic path (Gloo) serves it.
        .comm_create = nullptr,
        .comm_destroy = nullptr,
        .comm_abort = nullptr,
        .comm_all_reduce = nullptr,
        .comm_broadcast = nullptr,
        .comm_all_gather = nullptr,
        .comm_reduce_scatter = nullptr,
        .comm_send_recv = nullptr,
        .stream_enqueue_fallible_host_func = &stream_enqueue_fallible_host_func,
        .comm_send_recv_sized = nullptr,
        .plugin_option_info = &Plugin::plugin_option_info,
        .ipc_memory_alloc = ipc ? &ipc_memory_alloc : nullptr,
        .ipc_memory_export = ipc ? &ipc_memory_export : nullptr,
        .ipc_memory_import = ipc ? &ipc_memory_import : nullptr,
        .ipc_memory_close = ipc ? &ipc_memory_close : nullptr,
        .ipc_event_export = ipc_events ? &ipc_event_export : nullptr,
        .ipc_event_import = ipc_events ? &ipc_event_import : nullptr,
        // Not yet: peer copies (the runtime stages copies between devices
        // and bridges waits).
        .device_can_copy_peer = nullptr,
        .memcpy_peer = nullptr,
    };
}

constexpr keel_plugin_api kApi = make_api(true, true);
constexpr keel_plugin_api kApiWithMemoryIpc = make_api(true, false);
constexpr keel_plugin_api kApiWithEventIpc = make_api(false, true);
constexpr keel_plugin_api kApiWithoutIpc = make_api(false, false);

// The entries come exactly with the capabilities (keel.h's ipc.memory-set
// and ipc.event-set), which discovery gives every device or none.
const keel_plugin_api* table_for_devices() {
    const auto& devices = state().devices();
    const std::uint64_t caps = devices.empty() ? 0 : devices.front()->properties().capabilities;
    const bool memory = (caps & KEEL_DEVICE_CAP_IPC_MEMORY) != 0;
    const bool events = (caps & KEEL_DEVICE_CAP_IPC_EVENTS) != 0;
    if (memory && events) return &kApi;
    if (memory) return &kApiWithMemoryIpc;
    if (events) return &kApiWithEventIpc;
    return &kApiWithoutIpc;
}

}  // namespace

}  // namespace keel::level_zero::api

extern "C" KEEL_PLUGIN_EXPORT keel_error* keel_plugin_init(const keel_host_services* host,
                                                           const keel_plugin_api** out_api) {
    namespace api = keel::level_zero::api;
    keel_error* e = keel::level_zero::Plugin::init(host, out_api, &api::kApi);
    if (e == nullptr) *out_api = api::table_for_devices();
    return e;
}
