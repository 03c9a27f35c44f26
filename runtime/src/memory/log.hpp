// Logging of the memory machinery: what cannot be returned as an error
// (a failure inside a destructor or a background sweep) is logged here.
#pragma once

#include <memory>
#include <string>

namespace spdlog {
class logger;
}

namespace keel::memory::detail {

// Routes the messages to `logger` (the runtime's "keel" logger); until then
// they go to spdlog's default logger.
void use_logger(std::shared_ptr<spdlog::logger> logger) noexcept;

void log_warn(const std::string& message) noexcept;
void log_debug(const std::string& message) noexcept;

}  // namespace keel::memory::detail
