#include "plugin_state.hpp"

#include <keel/environment.hpp>
#include <keel/plugin/host_log.hpp>
#include <keel/plugin/shared_state.hpp>

#include <cstdlib>

namespace keel::cuda {

namespace {

plugin::SharedState<PluginState> g_state;

// A value that does not parse serves no test kernels (they are for tests).
bool test_kernels_requested() {
    const Result<std::optional<bool>> on = env::flag(env::Var::cuda_test_kernels);
    return on.ok() && on->value_or(false);
}

}  // namespace

PluginState::PluginState(Discovery discovery, bool with_test_kernels)
    : devices_(std::move(discovery.devices)),
      status_(std::move(discovery.status)),
      kernels_(devices_, kernel_defs(with_test_kernels)) {}

void PluginState::release_all() noexcept {
    for (auto& device : devices_) device->release_all();
}

Result<void> acquire_state() {
    return g_state.acquire([]() -> Result<std::unique_ptr<PluginState>> {
        Discovery found = discover_devices();
        if (plugin::HostLog::enabled(KEEL_LOG_INFO)) {
            std::string line = "[cuda] " + std::to_string(found.devices.size()) + " device(s)";
            for (const auto& d : found.devices) line += "; " + d->label() + ": " + d->properties().name;
            if (!found.status.empty()) line += "; " + found.status;
            plugin::HostLog::write(KEEL_LOG_INFO, line);
        }
        return std::make_unique<PluginState>(std::move(found), test_kernels_requested());
    });
}

bool release_state() noexcept {
    return g_state.release([](PluginState& s) { s.release_all(); });
}

const PluginState& state() noexcept { return g_state.get(); }

}  // namespace keel::cuda
