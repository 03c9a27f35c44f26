#include "plugin.hpp"

#include "access.hpp"
#include "discovery.hpp"
#include "host_func_guard.hpp"
#include "logger.hpp"

#include <keel/base/no_destructor.hpp>

#include <boost/dll/shared_library.hpp>

#include <dlfcn.h>

#include <cstring>
#include <mutex>

namespace keel::detail {

Plugin::Plugin(std::filesystem::path path, std::string type, boost::dll::shared_library library,
               std::unique_ptr<HostServices> services, const keel_plugin_api& table)
    : library_(std::make_unique<boost::dll::shared_library>(std::move(library))),
      services_(std::move(services)),
      path_(std::move(path)),
      type_(std::move(type)),
      api_(table, type_) {}

Plugin::~Plugin() {
    if (in_host_func()) {
        // plugin_shutdown would have to join the very thread we are on.
        logger()->error(
            "[loader] the last reference to plugin {} was dropped inside a host function; it is "
            "neither shut down nor unloaded (host functions must not own keel objects)",
            path_.string());
        pin_library(path_);
        keep_forever(std::move(services_));
        return;
    }
    for (const auto& slot : devices_) {
        slot->helpers->close(api_);
        slot->staging_blocks->close(api_, slot->handle);
    }
    api_.plugin_shutdown();
    logger()->debug("[loader] plugin {} shut down; unloading {}", type_, path_.string());
}

Result<void> Plugin::describe() {
    KEEL_TRY(read_info());
    KEEL_TRY(read_settings());
    return read_devices();
}

Result<void> Plugin::read_settings() {
    if (!api_.has_plugin_option_info()) return ok();
    // Bounded, so that a plugin that never answers NOT_FOUND cannot loop us.
    constexpr std::uint32_t kMaxSettings = 4096;
    for (std::uint32_t i = 0; i < kMaxSettings; ++i) {
        keel_option_info o{};
        o.struct_size = KEEL_OPTION_INFO_STRUCT_SIZE;
        Result<void> r = api_.plugin_option_info(i, &o);
        if (!r && r.error().code() == KEEL_STATUS_NOT_FOUND) return ok();
        KEEL_TRY(std::move(r));
        if (o.key == nullptr || o.value == nullptr)
            return Error(KEEL_STATUS_INTERNAL,
                         "plugin_option_info(" + std::to_string(i) + ") returned a null key or value");
        const auto text = [](const char* s) { return std::string(s != nullptr ? s : ""); };
        PluginSetting s;
        s.key = o.key;
        s.value = o.value;
        switch (o.source) {
            case KEEL_OPTION_SOURCE_ENVIRONMENT: s.source = SettingSource::environment; break;
            case KEEL_OPTION_SOURCE_OPTION: s.source = SettingSource::option; break;
            default: s.source = SettingSource::plugin_default; break;
        }
        s.environment_variable = text(o.environment_variable);
        s.accepts = text(o.accepts);
        s.meaning = text(o.meaning);
        settings_.push_back(std::move(s));
    }
    return Error(KEEL_STATUS_INTERNAL, "plugin_option_info never answered NOT_FOUND (more than " +
                                           std::to_string(kMaxSettings) + " settings)");
}

Result<void> Plugin::read_info() {
    keel_plugin_info info{};
    info.struct_size = KEEL_PLUGIN_INFO_STRUCT_SIZE;
    KEEL_TRY(api_.plugin_info(&info));
    if (info.device_type == nullptr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "plugin_info returned no device_type");
    std::string reported = info.device_type;
    if (!is_valid_device_type(reported))
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "plugin_info reports device type '" + reported +
                         "', which is not of the form [a-z0-9_]+");
    if (reported != type_)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "plugin_info reports device type '" + reported + "' but the file is named " +
                         path_.filename().string() + " (a plugin of type '" + reported +
                         "' must be named libkeel_" + reported + ".so)");
    version_ = info.version != nullptr ? info.version : "";
    status_ = info.status != nullptr ? info.status : "";
    return ok();
}

Result<void> Plugin::read_devices() {
    std::uint32_t count = 0;
    KEEL_TRY(api_.device_count(&count));
    devices_.reserve(count);
    for (std::uint32_t i = 0; i < count; ++i) {
        auto slot = std::make_unique<DeviceSlot>();
        slot->plugin = this;
        slot->index = i;
        slot->name = type_ + ":" + std::to_string(i);
        KEEL_TRY(api_.device_get(i, &slot->handle));
        if (slot->handle == nullptr)
            return Error(KEEL_STATUS_INTERNAL,
                         "device_get(" + std::to_string(i) + ") returned a null device");
        keel_device_properties p{};
        p.struct_size = KEEL_DEVICE_PROPERTIES_STRUCT_SIZE;
        KEEL_TRY(api_.device_properties(slot->handle, &p));
        DeviceProperties& d = slot->properties;
        d.name.assign(p.name, strnlen(p.name, sizeof p.name));
        d.vendor.assign(p.vendor, strnlen(p.vendor, sizeof p.vendor));
        d.total_memory = p.total_memory;
        d.capabilities = p.capabilities;
        d.compute_units = p.compute_units;
        d.max_allocation = p.max_allocation != 0 ? p.max_allocation : p.total_memory;
        d.alloc_alignment = p.alloc_alignment;
        if (d.alloc_alignment == 0 || (d.alloc_alignment & (d.alloc_alignment - 1)) != 0)
            logger()->warn("[loader] {} reports allocation alignment {}, which is not a power of two",
                           slot->name, d.alloc_alignment);
        devices_.push_back(std::move(slot));
    }
    return ok();
}

void pin_library(const std::filesystem::path& path) noexcept {
    // RTLD_NOLOAD: only if already loaded; RTLD_NODELETE: never unmapped.
    // The handle is deliberately never closed.
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) == nullptr)
        logger()->error("[loader] could not pin {}: {}", path.string(), dlerror());
}

void keep_forever(std::unique_ptr<HostServices> services) noexcept {
    static base::NoDestructor<std::mutex> mutex;
    static base::NoDestructor<std::vector<std::unique_ptr<HostServices>>> kept;  // forever, as it says
    std::lock_guard lock(*mutex);
    try {
        kept->push_back(std::move(services));
    } catch (...) {
        (void)services.release();  // out of memory: leaking is the safe choice here
    }
}

const PluginApi& api_of(const Device& device) noexcept { return Access::slot(device).api(); }

}  // namespace keel::detail
