#include "host_services.hpp"

#include "logger.hpp"

namespace keel::detail {

namespace {

spdlog::level::level_enum to_spdlog(keel_log_level level) noexcept {
    switch (level) {
        case KEEL_LOG_TRACE: return spdlog::level::trace;
        case KEEL_LOG_DEBUG: return spdlog::level::debug;
        case KEEL_LOG_INFO: return spdlog::level::info;
        case KEEL_LOG_WARN: return spdlog::level::warn;
        case KEEL_LOG_ERROR: return spdlog::level::err;
        default: return spdlog::level::err;
    }
}

void host_log(void* context, keel_log_level level, const char* message) {
    auto* log = static_cast<spdlog::logger*>(context);
    try {
        log->log(to_spdlog(level), "{}", message != nullptr ? message : "(null message)");
    } catch (...) {
        // Logging must never throw into a plugin thread.
    }
}

int32_t host_log_enabled(void* context, keel_log_level level) {
    return static_cast<spdlog::logger*>(context)->should_log(to_spdlog(level)) ? 1 : 0;
}

}  // namespace

HostServices::HostServices() : logger_(logger()) {
    services_.struct_size = KEEL_HOST_SERVICES_STRUCT_SIZE;
    services_.abi_major = KEEL_ABI_VERSION_MAJOR;
    services_.abi_minor = KEEL_ABI_VERSION_MINOR;
    services_.context = logger_.get();
    services_.log = &host_log;
    services_.log_enabled = &host_log_enabled;
    services_.option_stride = sizeof(keel_option);
}

HostServices::~HostServices() = default;

void HostServices::offer_options(const std::map<std::string, std::string>& options) {
    withdraw_options();
    option_text_.reserve(2 * options.size());  // no reallocation: options_ points into it
    for (const auto& [key, value] : options) {
        option_text_.push_back(key);
        option_text_.push_back(value);
        keel_option o{};
        o.struct_size = sizeof o;
        o.key = option_text_[option_text_.size() - 2].c_str();
        o.value = option_text_.back().c_str();
        options_.push_back(o);
    }
    services_.options = options_.empty() ? nullptr : options_.data();
    services_.option_count = options_.size();
}

void HostServices::withdraw_options() noexcept {
    services_.options = nullptr;
    services_.option_count = 0;
    options_.clear();
    option_text_.clear();
}

}  // namespace keel::detail
