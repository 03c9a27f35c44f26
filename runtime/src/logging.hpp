// The runtime's one logging path: the spdlog logger "keel" (to stderr, level
// from KEEL_LOG_LEVEL, default warn), for the loader, the C++ API, the memory
// machinery and the plugins' host services alike.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace keel::detail {

// The logger, created on first use. Reused if the application registered a
// logger named "keel" itself (its level is then left alone).
[[nodiscard]] const std::shared_ptr<spdlog::logger>& logger();

// "trace|debug|info|warn|error|off" (case-insensitive; "warning", "err" too).
[[nodiscard]] std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text);

// For what cannot be returned as an error (a failure inside a destructor or
// a background sweep): never throws.
void log_error(const std::string& message) noexcept;
void log_warn(const std::string& message) noexcept;
void log_debug(const std::string& message) noexcept;

}  // namespace keel::detail
