#include "log.hpp"

#include <spdlog/spdlog.h>

#include <mutex>

namespace keel::memory::detail {

namespace {

std::mutex g_mu;
std::shared_ptr<spdlog::logger> g_logger;  // guarded by g_mu

std::shared_ptr<spdlog::logger> current() {
    std::lock_guard lock(g_mu);
    return g_logger ? g_logger : spdlog::default_logger();
}

}  // namespace

void use_logger(std::shared_ptr<spdlog::logger> logger) noexcept {
    std::lock_guard lock(g_mu);
    g_logger = std::move(logger);
}

void log_warn(const std::string& message) noexcept {
    try {
        current()->warn("{}", message);
    } catch (...) {
    }
}

void log_debug(const std::string& message) noexcept {
    try {
        current()->debug("{}", message);
    } catch (...) {
    }
}

}  // namespace keel::memory::detail
