// The plugin's global state between keel_plugin_init and plugin_shutdown:
// its devices (KEEL_CPU_DEVICES of them) and what they share: pinned
// memory, the id counters and, in checker mode, one checker over every
// device's streams and memory. Created and destroyed on one thread (the ABI
// says init and shutdown are not concurrent with anything); read by every
// entry in between.
#pragma once

#include "checker/checker.hpp"
#include "config.hpp"
#include "device.hpp"
#include "device_memories.hpp"
#include "pinned_memory.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace keel::cpu {

class Plugin {
public:
    explicit Plugin(const Config& config);
    Plugin(const Plugin&) = delete;
    Plugin& operator=(const Plugin&) = delete;
    Plugin(Plugin&&) = delete;
    Plugin& operator=(Plugin&&) = delete;
    ~Plugin() = default;

    [[nodiscard]] const Config& config() const noexcept { return config_; }
    [[nodiscard]] std::uint32_t device_count() const noexcept { return static_cast<std::uint32_t>(devices_.size()); }
    // index < device_count().
    [[nodiscard]] Device& device(std::uint32_t index) noexcept { return *devices_[index]; }
    [[nodiscard]] const DeviceMemories& memories() const noexcept { return memories_; }

    // The leak report of plugin_shutdown over every device ("" when nothing
    // is live), after which every live stream and event is released.
    [[nodiscard]] std::string release_everything();

private:
    const Config config_;
    PinnedMemory pinned_;
    IdCounters ids_;
    std::vector<std::unique_ptr<Device>> devices_;
    DeviceMemories memories_;
    // Declared last: destroyed first, while the memory it refers to lives.
    std::unique_ptr<Checker> checker_;
};

// The live plugin; only valid between init and shutdown.
[[nodiscard]] Plugin& the_plugin() noexcept;

}  // namespace keel::cpu
