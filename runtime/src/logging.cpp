#include "logger.hpp"

#include <keel/base/no_destructor.hpp>
#include <keel/environment.hpp>

#include <spdlog/sinks/stdout_color_sinks.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace keel::detail {

std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text) {
    std::string t(text);
    std::transform(t.begin(), t.end(), t.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (t == "trace") return spdlog::level::trace;
    if (t == "debug") return spdlog::level::debug;
    if (t == "info") return spdlog::level::info;
    if (t == "warn" || t == "warning") return spdlog::level::warn;
    if (t == "error" || t == "err") return spdlog::level::err;
    if (t == "off") return spdlog::level::off;
    return std::nullopt;
}

namespace {

std::shared_ptr<spdlog::logger> make_logger() {
    if (auto existing = spdlog::get("keel")) return existing;
    std::shared_ptr<spdlog::logger> log;
    try {
        // stderr: stdout belongs to the program (keel-info prints there).
        log = spdlog::stderr_color_mt("keel");
    } catch (const spdlog::spdlog_ex&) {
        // Registered concurrently by someone else.
        if (auto existing = spdlog::get("keel")) return existing;
        log = std::make_shared<spdlog::logger>("keel");
    }
    log->set_level(spdlog::level::warn);
    // Logging cannot fail the program that asked for it: a value that does
    // not parse keeps the default here, and Runtime::create fails with it.
    if (const auto text = env::text(env::Var::log_level))
        if (auto level = parse_log_level(*text)) log->set_level(*level);
    return log;
}

}  // namespace

const std::shared_ptr<spdlog::logger>& logger() {
    static base::NoDestructor<const std::shared_ptr<spdlog::logger>> log(make_logger());  // used at exit too
    return *log;
}

namespace {
void log_at(spdlog::level::level_enum level, const std::string& message) noexcept {
    try {
        logger()->log(level, "{}", message);
    } catch (...) {
        // Logging must never throw out of a destructor or a release.
    }
}
}  // namespace

void log_error(const std::string& message) noexcept { log_at(spdlog::level::err, message); }
void log_warn(const std::string& message) noexcept { log_at(spdlog::level::warn, message); }
void log_debug(const std::string& message) noexcept { log_at(spdlog::level::debug, message); }

}  // namespace keel::detail
