// Logging of the memory machinery: what cannot be returned as an error
// (a failure inside a destructor or a background sweep) is logged here.
#pragma once

#include <string>

namespace keel::memory::detail {

void log_warn(const std::string& message) noexcept;
void log_debug(const std::string& message) noexcept;

}  // namespace keel::memory::detail
