// The runtime's one logging path: the spdlog logger "keel" (to stderr, level
// from KEEL_LOG_LEVEL, default warn), for the loader, the C++ API, the memory
// machinery and the plugins' host services alike. The logger itself is in
// logger.hpp.
#pragma once

#include <string>

namespace keel::detail {

// For what cannot be returned as an error (a failure inside a destructor or
// a background sweep): never throws.
void log_error(const std::string& message) noexcept;
void log_warn(const std::string& message) noexcept;
void log_debug(const std::string& message) noexcept;

}  // namespace keel::detail
