// The spdlog logger behind logging.hpp, for the few files that format with
// it or hand it on (the loader, host services). Kept apart so that the rest
// of the runtime does not compile spdlog and fmt.
#pragma once

#include "logging.hpp"

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
