// Everything the plugin holds between keel_plugin_init and plugin_shutdown:
// the drivers and devices discovery found, and why there are none.
#pragma once

#include "device.hpp"
#include "kernel_registry.hpp"

#include <keel/result.hpp>

#include <level_zero/ze_api.h>

#include <memory>
#include <string>
#include <vector>

namespace keel::level_zero {

// Immutable after construction except inside each Device (whose members
// are thread-safe), so entries read it from any thread without locking.
class PluginState {
public:
    explicit PluginState(Discovery discovery)
        : drivers_(std::move(discovery.drivers)),
          devices_(std::move(discovery.devices)),
          status_(std::move(discovery.status)),
          kernels_(devices_, kernel_defs()) {}
    PluginState(const PluginState&) = delete;
    PluginState& operator=(const PluginState&) = delete;
    PluginState(PluginState&&) = delete;
    PluginState& operator=(PluginState&&) = delete;
    // Makes no Level Zero call: at process exit without plugin_shutdown the
    // loader may already be torn down.
    ~PluginState() = default;

    // Destroys every Level Zero object the plugin made (plugin_shutdown).
    void release_all() noexcept;

    [[nodiscard]] const std::vector<std::unique_ptr<Device>>& devices() const noexcept { return devices_; }
    // The keel device for a Level Zero device handle, or null.
    [[nodiscard]] const Device* find(ze_device_handle_t handle) const noexcept;
    // plugin_info's status: "" or why devices are missing. Stable storage.
    [[nodiscard]] const std::string& status() const noexcept { return status_; }
    [[nodiscard]] const KernelRegistry& kernels() const noexcept { return kernels_; }

private:
    std::vector<std::unique_ptr<DriverContext>> drivers_;
    std::vector<std::unique_ptr<Device>> devices_;
    std::string status_;
    KernelRegistry kernels_;
};

// Creates the state (discovery) on the first call and counts later ones
// (plugin::SharedState).
[[nodiscard]] Result<void> acquire_state();
// Drops one reference; the last one destroys the state and returns true.
bool release_state() noexcept;
// The state; valid between acquire_state and the last release_state, which
// the ABI guarantees for every entry.
[[nodiscard]] const PluginState& state() noexcept;

}  // namespace keel::level_zero
