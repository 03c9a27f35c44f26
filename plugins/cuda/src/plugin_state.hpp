// Everything the plugin holds between keel_plugin_init and plugin_shutdown:
// the devices discovery found, why there are none, and the kernel registry;
// and the CUDA part of plugin::DevicePlugin, which does the rest.
#pragma once

#include "device.hpp"
#include "kernel_registry.hpp"

#include <keel/plugin/device_plugin.hpp>
#include <keel/plugin/device_set.hpp>
#include <keel/result.hpp>

#include <memory>

namespace keel::cuda {

// PluginState and Vendor look like the other GPU plugin's on purpose: what
// they share (the device list, the counted state, init and shutdown, the
// generic entries) is plugins/support's DeviceSet and DevicePlugin; what is
// left differs in each (here: the test-kernel switch and the NCCL library
// option; in Level Zero: the driver contexts its devices must outlive and
// the loader option), and is the plugin's to say.
//
// Immutable after construction except inside each Device (whose members
// are thread-safe), so entries read it from any thread without locking.
class PluginState : public plugin::DeviceSet<Device> {
public:
    PluginState(Discovery discovery, bool with_test_kernels);

    // Destroys pooled handles and frees leaked allocations (plugin_shutdown).
    void release_all() noexcept { release_devices(); }

    [[nodiscard]] const KernelRegistry& kernels() const noexcept { return kernels_; }

private:
    KernelRegistry kernels_;
};

struct Vendor {
    using Device = cuda::Device;
    using State = PluginState;
    static constexpr const char* kDeviceType = "cuda";
    static constexpr const char* kVersion = KEEL_CUDA_PLUGIN_VERSION;
    // Never fails: no driver or no GPU gives zero devices and a status.
    static Result<std::unique_ptr<PluginState>> make_state();
    static constexpr plugin::OptionSpec kOptions[] = {
        {"test_kernels", env::Var::cuda_test_kernels},
        {"nccl_library", env::Var::nccl_library},
    };
};

using Plugin = plugin::DevicePlugin<Vendor>;

// The state; only valid between the first keel_plugin_init and the last
// plugin_shutdown, which the ABI guarantees for every entry.
[[nodiscard]] inline const PluginState& state() noexcept { return Plugin::state(); }

}  // namespace keel::cuda
