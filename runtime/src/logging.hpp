// The runtime's spdlog logger "keel" (level from KEEL_LOG_LEVEL, default warn).
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <optional>
#include <string_view>

namespace keel::detail {

// The logger, created on first use. Reused if the application registered a
// logger named "keel" itself (its level is then left alone).
[[nodiscard]] const std::shared_ptr<spdlog::logger>& logger();

// "trace|debug|info|warn|error|off" (case-insensitive; "warning", "err" too).
[[nodiscard]] std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text);

}  // namespace keel::detail
