#include "log.hpp"

#include <spdlog/spdlog.h>

namespace keel::memory::detail {

void log_warn(const std::string& message) noexcept {
    try {
        spdlog::warn("{}", message);
    } catch (...) {
    }
}

void log_debug(const std::string& message) noexcept {
    try {
        spdlog::debug("{}", message);
    } catch (...) {
    }
}

}  // namespace keel::memory::detail
