#include "plugin_state.hpp"

#include <keel/plugin/host_log.hpp>

#include <mutex>

namespace keel::level_zero {

namespace {

std::mutex g_mutex;  // guards acquire/release only; entries read g_state lock-free
std::unique_ptr<PluginState> g_state;
int g_references = 0;

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

Result<void> acquire_state() {
    std::lock_guard lock(g_mutex);
    if (g_references > 0) {
        ++g_references;
        return ok();
    }
    Discovery found = discover_devices();
    if (plugin::HostLog::enabled(KEEL_LOG_INFO)) {
        std::string line = "[level_zero] " + std::to_string(found.devices.size()) + " device(s)";
        for (const auto& d : found.devices) line += "; " + d->label() + ": " + d->properties().name;
        if (!found.status.empty()) line += "; " + found.status;
        plugin::HostLog::write(KEEL_LOG_INFO, line);
    }
    g_state = std::make_unique<PluginState>(std::move(found));
    g_references = 1;
    return ok();
}

bool release_state() noexcept {
    std::lock_guard lock(g_mutex);
    if (g_references == 0 || --g_references > 0) return false;
    g_state->release_all();
    g_state.reset();
    return true;
}

const PluginState& state() noexcept { return *g_state; }

const KernelRegistry& kernels() noexcept { return g_state->kernels(); }

}  // namespace keel::level_zero
