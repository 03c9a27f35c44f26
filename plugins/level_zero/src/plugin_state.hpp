// Everything the plugin holds between keel_plugin_init and plugin_shutdown:
// the drivers and devices discovery found, and why there are none; and the
// Level Zero part of plugin::DevicePlugin, which does the rest.
#pragma once

#include "device.hpp"
#include "kernel_registry.hpp"

#include <keel/plugin/device_plugin.hpp>
#include <keel/plugin/device_set.hpp>
#include <keel/result.hpp>

#include <level_zero/ze_api.h>

#include <memory>
#include <vector>

namespace keel::level_zero {

// A base of PluginState ahead of its devices, so that the drivers'
// contexts, which every Device refers to, are destroyed after them.
struct DriverContexts {
    std::vector<std::unique_ptr<DriverContext>> drivers;
};

// PluginState and Vendor look like the other GPU plugin's on purpose: what
// they share (the device list, the counted state, init and shutdown, the
// generic entries) is plugins/support's DeviceSet and DevicePlugin; what is
// left differs in each (here: the driver contexts its devices must outlive
// and the loader option; in CUDA: the test-kernel switch and the NCCL
// library option), and is the plugin's to say.
//
// Immutable after construction except inside each Device (whose members
// are thread-safe), so entries read it from any thread without locking.
class PluginState : private DriverContexts, public plugin::DeviceSet<Device> {
public:
    explicit PluginState(Discovery discovery)
        : DriverContexts{std::move(discovery.drivers)},
          DeviceSet(std::move(discovery.devices), std::move(discovery.status)),
          kernels_(devices(), kernel_defs()) {}

    // Destroys every Level Zero object the plugin made (plugin_shutdown).
    void release_all() noexcept;

    // The keel device for a Level Zero device handle, or null.
    [[nodiscard]] const Device* find(ze_device_handle_t handle) const noexcept;
    [[nodiscard]] const KernelRegistry& kernels() const noexcept { return kernels_; }

private:
    KernelRegistry kernels_;
};

struct Vendor {
    using Device = level_zero::Device;
    using State = PluginState;
    static constexpr const char* kDeviceType = "level_zero";
    static constexpr const char* kVersion = KEEL_LEVEL_ZERO_PLUGIN_VERSION;
    // Never fails: no loader, driver or GPU gives zero devices and a status.
    static Result<std::unique_ptr<PluginState>> make_state();
    static constexpr plugin::OptionSpec kOptions[] = {
        {"loader", env::Var::level_zero_loader},
    };
};

using Plugin = plugin::DevicePlugin<Vendor>;

// The state; valid between the first keel_plugin_init and the last
// plugin_shutdown, which the ABI guarantees for every entry.
[[nodiscard]] inline const PluginState& state() noexcept { return Plugin::state(); }

}  // namespace keel::level_zero
