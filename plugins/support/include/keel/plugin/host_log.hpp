// Plugin-side logging through the runtime's host services, so a plugin logs
// through spdlog without linking it.
#pragma once

#include <keel/keel.h>

#include <string>

namespace keel::plugin {

class HostLog {
public:
    // Remembers the services; `services` may be null (logging then goes nowhere).
    // Call once from the entry symbol before any other thread exists.
    static void install(const keel_host_services* services) noexcept;
    // Forgets the services (at plugin_shutdown).
    static void uninstall() noexcept;

    [[nodiscard]] static bool enabled(keel_log_level level) noexcept;
    static void write(keel_log_level level, const std::string& message) noexcept;
};

}  // namespace keel::plugin
