// The devices a plugin found when it started, and why there are none (or
// fewer): the part of a plugin's state that DevicePlugin's entries read.
#pragma once

#include <keel/keel.h>
#include <keel/plugin/host_log.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace keel::plugin {

// `Device` has label() ("cuda:0"), properties() (a keel_device_properties)
// and release_all() (plugin_shutdown: destroy what it still holds).
//
// Immutable after construction except inside each Device (whose members
// must be thread-safe), so entries read it from any thread without locking.
template <class Device>
class DeviceSet {
public:
    DeviceSet(std::vector<std::unique_ptr<Device>> devices, std::string status)
        : devices_(std::move(devices)), status_(std::move(status)) {}
    DeviceSet(const DeviceSet&) = delete;
    DeviceSet& operator=(const DeviceSet&) = delete;
    DeviceSet(DeviceSet&&) = delete;
    DeviceSet& operator=(DeviceSet&&) = delete;
    // Makes no driver call: at process exit without plugin_shutdown, the
    // driver may already be torn down.
    ~DeviceSet() = default;

    [[nodiscard]] const std::vector<std::unique_ptr<Device>>& devices() const noexcept { return devices_; }
    // plugin_info's status: "" or why devices are missing. Stable storage.
    [[nodiscard]] const std::string& status() const noexcept { return status_; }

    // plugin_shutdown: every device destroys what it still holds.
    void release_devices() noexcept {
        for (auto& device : devices_) device->release_all();
    }

    // One info line: "[cuda] 2 device(s); cuda:0: <name>; cuda:1: <name>; <status>".
    void log_found(const char* device_type) const {
        if (!HostLog::enabled(KEEL_LOG_INFO)) return;
        std::string line = "[" + std::string(device_type) + "] " + std::to_string(devices_.size()) + " device(s)";
        for (const auto& d : devices_) line += "; " + d->label() + ": " + d->properties().name;
        if (!status_.empty()) line += "; " + status_;
        HostLog::write(KEEL_LOG_INFO, line);
    }

private:
    std::vector<std::unique_ptr<Device>> devices_;
    std::string status_;
};

}  // namespace keel::plugin
