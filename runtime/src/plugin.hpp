// Plugin: one loaded plugin library, its table and its devices. Shared
// (std::shared_ptr) by the Runtime and every object made from its devices;
// the last owner shuts the plugin down and unloads it.
#pragma once

#include "cross_device/helper_streams.hpp"
#include "cross_device/staging_blocks.hpp"
#include "host_services.hpp"
#include "plugin_api.hpp"
#include "plugin_shares.hpp"

#include <keel/device.hpp>
#include <keel/runtime.hpp>
#include <keel/keel.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace boost::dll {
class shared_library;
}

namespace keel::detail {

class Plugin;

// One device of a plugin. Lives inside its Plugin; Device holds it through
// a std::shared_ptr that shares the plugin's handle group (plugin_shares.hpp).
struct DeviceSlot {
    Plugin* plugin = nullptr;
    keel_device handle = nullptr;
    std::uint32_t index = 0;
    std::string name;  // "cpu:0"
    DeviceProperties properties;
    // Streams the runtime keeps for work across devices (cross_device/),
    // destroyed before plugin_shutdown.
    std::unique_ptr<cross_device::HelperStreams> helpers = std::make_unique<cross_device::HelperStreams>();
    // Host blocks its staged copies with other devices reuse, freed before
    // plugin_shutdown.
    std::unique_ptr<cross_device::StagingBlocks> staging_blocks = std::make_unique<cross_device::StagingBlocks>();

    [[nodiscard]] const PluginApi& api() const noexcept;
};

class Plugin {
public:
    // Takes over a library whose keel_plugin_init succeeded and whose table
    // passed PluginApi::validate. From here on the destructor shuts it down.
    Plugin(std::filesystem::path path, std::string type, boost::dll::shared_library library,
           std::unique_ptr<HostServices> services, const keel_plugin_api& table);

    Plugin(const Plugin&) = delete;
    Plugin& operator=(const Plugin&) = delete;
    Plugin(Plugin&&) = delete;
    Plugin& operator=(Plugin&&) = delete;
    // plugin_shutdown, then unload. Order matters: the host services must
    // outlive plugin_shutdown, and the library (whose code is running until
    // then) is unloaded last.
    ~Plugin();

    // Reads plugin_info and every device; errors name the problem.
    [[nodiscard]] Result<void> describe();

    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
    [[nodiscard]] const std::string& type() const noexcept { return type_; }
    [[nodiscard]] const std::string& version() const noexcept { return version_; }
    [[nodiscard]] const std::string& status() const noexcept { return status_; }
    // What plugin_option_info said at load (empty without it).
    [[nodiscard]] const std::vector<PluginSetting>& settings() const noexcept { return settings_; }
    [[nodiscard]] const PluginApi& api() const noexcept { return api_; }
    [[nodiscard]] const std::vector<std::unique_ptr<DeviceSlot>>& devices() const noexcept {
        return devices_;
    }
    // Who keeps this plugin alive besides the loader's callers.
    [[nodiscard]] PluginShares& shares() noexcept { return shares_; }

private:
    [[nodiscard]] Result<void> read_info();
    [[nodiscard]] Result<void> read_devices();
    [[nodiscard]] Result<void> read_settings();

    // Declared first, destroyed last. Held through a pointer so that the
    // files including this header do not compile Boost.DLL.
    std::unique_ptr<boost::dll::shared_library> library_;
    std::unique_ptr<HostServices> services_;
    std::filesystem::path path_;
    std::string type_;
    PluginApi api_;
    std::string version_;
    std::string status_;
    std::vector<PluginSetting> settings_;
    std::vector<std::unique_ptr<DeviceSlot>> devices_;
    PluginShares shares_;
};

inline const PluginApi& DeviceSlot::api() const noexcept { return plugin->api(); }

// Makes dlclose of `path` a no-op for the rest of the process, for a library
// that may still run code (or whose shutdown cannot be called safely).
void pin_library(const std::filesystem::path& path) noexcept;

// Keeps the host services of a pinned plugin until the process exits, since
// the plugin may still log through them.
void keep_forever(std::unique_ptr<HostServices> services) noexcept;

// The plugin table behind a public Device.
[[nodiscard]] const PluginApi& api_of(const Device& device) noexcept;

}  // namespace keel::detail
