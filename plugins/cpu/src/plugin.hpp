// The plugin's global state between keel_plugin_init and plugin_shutdown.
// Created and destroyed on one thread (the ABI says init and shutdown are
// not concurrent with anything); read by every entry in between.
#pragma once

#include "config.hpp"
#include "device.hpp"

#include <memory>

namespace keel::cpu {

class Plugin {
public:
    explicit Plugin(const Config& config) : config_(config), device_(config) {}
    Plugin(const Plugin&) = delete;
    Plugin& operator=(const Plugin&) = delete;
    Plugin(Plugin&&) = delete;
    Plugin& operator=(Plugin&&) = delete;
    ~Plugin() = default;

    [[nodiscard]] const Config& config() const noexcept { return config_; }
    [[nodiscard]] Device& device() noexcept { return device_; }

private:
    const Config config_;
    Device device_;
};

// The live plugin; only valid between init and shutdown.
[[nodiscard]] Plugin& the_plugin() noexcept;

}  // namespace keel::cpu
