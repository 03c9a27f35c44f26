// The one exported symbol: version negotiation, configuration, the table,
// and plugin_info / plugin_shutdown.
#include "checker/annotations.hpp"
#include "entries.hpp"
#include "ipc/ipc_entries.hpp"
#include "parallel_for.hpp"
#include "plugin.hpp"

#include <keel/base/no_destructor.hpp>
#include <keel/keel.h>
#include <keel/plugin/boundary.hpp>
#include <keel/plugin/host_log.hpp>
#include <keel/plugin/negotiation.hpp>
#include <keel/plugin/options.hpp>
#include <keel/plugin/plugin_global.hpp>

#include <memory>

namespace keel::cpu {
namespace {

plugin::PluginGlobal<Plugin> g_plugin;
// The settings and where each came from, for plugin_option_info; set at
// init, before the table is handed out, and read-only until shutdown.
// Never destroyed: plugin_shutdown may run at exit, after this file's
// globals are gone (a Runtime held in a global).
base::NoDestructor<plugin::Options> g_options;

constexpr const char* kVersion = "0.1.0";

keel_error* plugin_info(keel_plugin_info* out) {
    return plugin::entry("cpu plugin_info",
                         [&]() -> Result<void> { return plugin::write_plugin_info(out, "cpu", kVersion, ""); });
}

void plugin_shutdown() {
    if (!g_plugin) return;
    std::string report = g_plugin->release_everything();
    if (!report.empty())
        plugin::HostLog::write(KEEL_LOG_WARN, "[cpu plugin_shutdown] " + report);
    else
        plugin::HostLog::write(KEEL_LOG_DEBUG, "[cpu plugin_shutdown] clean: no live allocations, streams or events");
    g_plugin.reset();
    *g_options = plugin::Options();
    stop_thread_pool();
    plugin::HostLog::uninstall();
}

keel_error* plugin_option_info(std::uint32_t index, keel_option_info* out) {
    return plugin::entry("cpu plugin_option_info", [&]() -> Result<void> { return g_options->describe(index, out); });
}

constexpr keel_plugin_api kApi = [] {
    keel_plugin_api api{};
    api.struct_size = KEEL_PLUGIN_API_STRUCT_SIZE;
    api.abi_major = KEEL_ABI_VERSION_MAJOR;
    api.abi_minor = KEEL_ABI_VERSION_MINOR;
    api.plugin_info = &plugin_info;
    api.plugin_shutdown = &plugin_shutdown;
    api.device_count = &entries::device_count;
    api.device_get = &entries::device_get;
    api.device_properties = &entries::device_properties;
    api.stream_create = &entries::stream_create;
    api.stream_destroy = &entries::stream_destroy;
    api.stream_synchronize = &entries::stream_synchronize;
    api.stream_query = &entries::stream_query;
    api.stream_wait_event = &entries::stream_wait_event;
    api.stream_enqueue_host_func = &entries::stream_enqueue_host_func;
    api.stream_enqueue_fallible_host_func = &entries::stream_enqueue_fallible_host_func;
    api.event_create = &entries::event_create;
    api.event_destroy = &entries::event_destroy;
    api.event_record = &entries::event_record;
    api.event_query = &entries::event_query;
    api.event_synchronize = &entries::event_synchronize;
    api.device_alloc = &entries::device_alloc;
    api.device_free = &entries::device_free;
    api.memcpy_h2d = &entries::memcpy_h2d;
    api.memcpy_d2h = &entries::memcpy_d2h;
    api.memcpy_d2d = &entries::memcpy_d2d;
    api.memset_d8 = &entries::memset_d8;
    api.device_memory_info = &entries::device_memory_info;
    api.host_alloc = &entries::host_alloc;
    api.host_free = &entries::host_free;
    api.event_elapsed_time = &entries::event_elapsed_time;
    api.kernel_get = &entries::kernel_get;
    api.kernel_launch = &entries::kernel_launch;
    api.memcpy_h2d_inline = &entries::memcpy_h2d_inline;
    api.plugin_option_info = &plugin_option_info;
    api.ipc_memory_alloc = &entries::ipc_memory_alloc;
    api.ipc_memory_export = &entries::ipc_memory_export;
    api.ipc_memory_import = &entries::ipc_memory_import;
    api.ipc_memory_close = &entries::ipc_memory_close;
    api.ipc_event_export = &entries::ipc_event_export;
    api.ipc_event_import = &entries::ipc_event_import;
    api.device_can_copy_peer = &entries::device_can_copy_peer;
    api.memcpy_peer = &entries::memcpy_peer;
    return api;
}();

// In checker mode the table also takes the allocator's annotations.
constexpr keel_plugin_api kCheckedApi = [] {
    keel_plugin_api api = kApi;
    api.stream_annotate_range = &entries::stream_annotate_range;
    return api;
}();

}  // namespace

Plugin& the_plugin() noexcept { return *g_plugin; }

}  // namespace keel::cpu

extern "C" KEEL_PLUGIN_EXPORT keel_error* keel_plugin_init(const keel_host_services* host,
                                                         const keel_plugin_api** out_api) {
    using namespace keel;
    return plugin::entry("cpu keel_plugin_init", [&]() -> Result<void> {
        KEEL_TRY(plugin::check_host_services(host));
        KEEL_TRY(plugin::require_non_null(out_api, "out_api"));
        if (cpu::g_plugin) return Error(KEEL_STATUS_FAILED_PRECONDITION, "already initialised (no plugin_shutdown yet)");
        KEEL_TRY_ASSIGN(plugin::Options options, plugin::Options::read(host, cpu::option_specs()));
        KEEL_TRY_ASSIGN(cpu::Config config, cpu::read_config(options));
        *cpu::g_options = std::move(options);
        plugin::HostLog::install(host);
        cpu::start_thread_pool(config.pool_threads);
        cpu::g_plugin.emplace(config);
        if (config.checker_active)
            plugin::HostLog::write(KEEL_LOG_INFO, "[cpu keel_plugin_init] checker mode on (see plugins/cpu/README.md)");
        *out_api = config.checker_active ? &cpu::kCheckedApi : &cpu::kApi;
        return ok();
    });
}
