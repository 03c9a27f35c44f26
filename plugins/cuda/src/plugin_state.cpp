#include "plugin_state.hpp"

#include <keel/plugin/host_log.hpp>
#include <keel/plugin/shared_state.hpp>

#include <cstdlib>
#include <cstring>

namespace keel::cuda {

namespace {

plugin::SharedState<PluginState> g_state;

bool test_kernels_requested() {
    const char* value = std::getenv("KEEL_CUDA_TEST_KERNELS");
    return value != nullptr && std::strcmp(value, "1") == 0;
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
