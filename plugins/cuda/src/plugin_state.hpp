// Everything the plugin holds between keel_plugin_init and plugin_shutdown:
// the devices discovery found, why there are none, and the kernel registry.
#pragma once

#include "device.hpp"
#include "kernel_registry.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <memory>
#include <string>
#include <vector>

namespace keel::cuda {

// Immutable after construction except inside each Device (whose members
// are thread-safe), so entries read it from any thread without locking.
class PluginState {
public:
    PluginState(Discovery discovery, bool with_test_kernels);
    PluginState(const PluginState&) = delete;
    PluginState& operator=(const PluginState&) = delete;
    PluginState(PluginState&&) = delete;
    PluginState& operator=(PluginState&&) = delete;
    // Makes no CUDA call: at process exit without plugin_shutdown, CUDA may
    // already be torn down.
    ~PluginState() = default;

    // Destroys pooled handles and frees leaked allocations (plugin_shutdown).
    void release_all() noexcept;

    [[nodiscard]] const std::vector<std::unique_ptr<Device>>& devices() const noexcept {
        return devices_;
    }
    // plugin_info's status: "" or why devices are missing. Stable storage.
    [[nodiscard]] const std::string& status() const noexcept { return status_; }
    [[nodiscard]] const KernelRegistry& kernels() const noexcept { return kernels_; }

private:
    std::vector<std::unique_ptr<Device>> devices_;
    std::string status_;
    KernelRegistry kernels_;
};

// Creates the state on the first call, counts later ones (a library loaded
// twice through the same path is one instance and gets init twice).
[[nodiscard]] Result<void> acquire_state();
// Drops one reference; the last one destroys the state and returns true.
bool release_state() noexcept;
// The state; only valid between acquire_state and the last release_state,
// which the ABI guarantees for every entry.
[[nodiscard]] const PluginState& state() noexcept;

}  // namespace keel::cuda
