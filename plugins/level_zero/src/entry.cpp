// The plugin's one exported symbol, version negotiation, and the table.
#include "entries.hpp"
#include "plugin_state.hpp"

#include <keel/keel.h>
#include <keel/plugin/boundary.hpp>
#include <keel/plugin/host_log.hpp>
#include <keel/plugin/negotiation.hpp>


namespace keel::level_zero::api {

namespace {

constexpr const char* kDeviceType = "level_zero";
constexpr const char* kVersion = KEEL_LEVEL_ZERO_PLUGIN_VERSION;

keel_error* plugin_info(keel_plugin_info* out) noexcept {
    return plugin::entry("level_zero plugin_info", [&]() -> Result<void> {
        return plugin::write_plugin_info(out, kDeviceType, kVersion, state().status().c_str());
    });
}

void plugin_shutdown() noexcept {
    if (release_state()) plugin::HostLog::uninstall();
}

// device_memory_info is absent: Level Zero 1.4's core API reports no free
// memory (only Sysman does, and only when ZES_ENABLE_SYSMAN=1 was set
// before zeInit, which a plugin cannot impose on its process).
constexpr keel_plugin_api kApi = {
    .struct_size = KEEL_PLUGIN_API_STRUCT_SIZE,
    .abi_major = KEEL_ABI_VERSION_MAJOR,
    .abi_minor = KEEL_ABI_VERSION_MINOR,
    .plugin_info = &plugin_info,
    .plugin_shutdown = &plugin_shutdown,
    .device_count = &device_count,
    .device_get = &device_get,
    .device_properties = &device_properties,
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
    .device_pageable_staging_stats = &device_pageable_staging_stats,
    .stream_annotate_range = nullptr,  // no checker to tell
    .stream_enqueue_fallible_host_func = &stream_enqueue_fallible_host_func,
};

}  // namespace

}  // namespace keel::level_zero::api

extern "C" KEEL_PLUGIN_EXPORT keel_error* keel_plugin_init(const keel_host_services* host,
                                                           const keel_plugin_api** out_api) {
    using namespace keel;
    return plugin::entry("level_zero init", [&]() -> Result<void> {
        KEEL_TRY(plugin::check_host_services(host));
        KEEL_TRY(plugin::require_non_null(out_api, "out_api"));
        plugin::HostLog::install(host);
        Result<void> acquired = level_zero::acquire_state();
        if (!acquired.ok()) {
            plugin::HostLog::uninstall();
            return acquired;
        }
        *out_api = &level_zero::api::kApi;
        return ok();
    });
}
