#include "plugin_state.hpp"

#include <keel/plugin/host_log.hpp>
#include <keel/plugin/shared_state.hpp>

namespace keel::level_zero {

namespace {

plugin::SharedState<PluginState> g_state;

// Found devices with their kernel table, logged at info level.
Result<std::unique_ptr<PluginState>> discover() {
    Discovery found = discover_devices();
    if (plugin::HostLog::enabled(KEEL_LOG_INFO)) {
        std::string line = "[level_zero] " + std::to_string(found.devices.size()) + " device(s)";
        for (const auto& d : found.devices) line += "; " + d->label() + ": " + d->properties().name;
        if (!found.status.empty()) line += "; " + found.status;
        plugin::HostLog::write(KEEL_LOG_INFO, line);
    }
    return std::make_unique<PluginState>(std::move(found));
}

}  // namespace

void PluginState::release_all() noexcept {
    for (auto& device : devices_) device->release_all();
    for (auto& driver : drivers_) driver->destroy();
}

const Device* PluginState::find(ze_device_handle_t handle) const noexcept {
    for (const auto& d : devices_)
        if (d->handle() == handle) return d.get();
    return nullptr;
}

Result<void> acquire_state() { return g_state.acquire(&discover); }

bool release_state() noexcept {
    return g_state.release([](PluginState& s) { s.release_all(); });
}

const PluginState& state() noexcept { return g_state.get(); }

const KernelRegistry& kernels() noexcept { return g_state.get().kernels(); }

}  // namespace keel::level_zero
