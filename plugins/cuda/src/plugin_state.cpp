#include "plugin_state.hpp"

#include <keel/environment.hpp>

namespace keel::cuda {

namespace {

// A value that does not parse serves no test kernels (they are for tests).
bool test_kernels_requested() {
    const Result<std::optional<bool>> on = Plugin::options().flag("test_kernels");
    return on.ok() && on->value_or(false);
}

}  // namespace

PluginState::PluginState(Discovery discovery, bool with_test_kernels)
    : DeviceSet(std::move(discovery.devices), std::move(discovery.status)),
      kernels_(devices(), kernel_defs(with_test_kernels)) {}

Result<std::unique_ptr<PluginState>> Vendor::make_state() {
    return std::make_unique<PluginState>(discover_devices(), test_kernels_requested());
}

}  // namespace keel::cuda
