#include "plugin_state.hpp"

namespace keel::level_zero {

void PluginState::release_all() noexcept {
    release_devices();
    for (auto& driver : drivers) driver->destroy();
}

const Device* PluginState::find(ze_device_handle_t handle) const noexcept {
    for (const auto& d : devices())
        if (d->handle() == handle) return d.get();
    return nullptr;
}

Result<std::unique_ptr<PluginState>> Vendor::make_state() {
    return std::make_unique<PluginState>(discover_devices());
}

const KernelRegistry& kernels() noexcept { return state().kernels(); }

}  // namespace keel::level_zero
