#include "plugin_state.hpp"

#include <keel/plugin/host_log.hpp>
#include <keel/plugin/plugin_global.hpp>

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace keel::cuda {

namespace {

std::mutex g_mutex;  // guards acquire/release only; entries read g_state lock-free
plugin::PluginGlobal<PluginState> g_state;
int g_references = 0;

bool test_kernels_requested() {
    const char* value = std::getenv("KEEL_CUDA_TEST_KERNELS");
    return value != nullptr && std::strcmp(value, "1") == 0;
}

}  // namespace

PluginState::PluginState(Discovery discovery, bool with_test_kernels)
    : devices_(std::move(discovery.devices)),
      status_(std::move(discovery.status)),
      kernels_(devices_, with_test_kernels) {}

void PluginState::release_all() noexcept {
    for (auto& device : devices_) device->release_all();
}

Result<void> acquire_state() {
    std::lock_guard lock(g_mutex);
    if (g_references > 0) {
        ++g_references;
        return ok();
    }
    Discovery found = discover_devices();
    if (plugin::HostLog::enabled(KEEL_LOG_INFO)) {
        std::string line = "[cuda] " + std::to_string(found.devices.size()) + " device(s)";
        for (const auto& d : found.devices) line += "; " + d->label() + ": " + d->properties().name;
        if (!found.status.empty()) line += "; " + found.status;
        plugin::HostLog::write(KEEL_LOG_INFO, line);
    }
    g_state.emplace(std::move(found), test_kernels_requested());
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

}  // namespace keel::cuda
