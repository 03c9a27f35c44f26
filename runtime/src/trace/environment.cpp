#include "trace/environment.hpp"

#include <keel/environment.hpp>
#include <keel/trace.hpp>

#include "logging.hpp"
#include "trace/session.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace keel::trace {

namespace {

// At exit, after the program's own code: the logger may be gone, so errors
// go to stderr directly.
void stop_at_exit() {
    auto report = registry().stop();
    if (!report.ok())
        std::fprintf(stderr, "[keel] KEEL_TRACE: %s\n", report.error().message().c_str());
}

}  // namespace

Result<void> apply_environment() {
    KEEL_TRY_ASSIGN(std::optional<bool> history, env::flag(env::Var::memory_history));
    if (history) set_memory_history(*history);
    static std::atomic<bool> applied{false};
    const std::optional<std::string_view> path = env::text(env::Var::trace);
    if (!path || applied.exchange(true)) return ok();
    SessionOptions options;
    options.path = resolve_path(*path);
    if (auto started = registry().start(options); !started.ok()) {
        detail::log_warn("KEEL_TRACE ignored: " + started.error().message());
        return ok();
    }
    if (std::atexit(&stop_at_exit) != 0) {
        (void)registry().stop();
        return Error(KEEL_STATUS_INTERNAL, "[Runtime::create] KEEL_TRACE: cannot register the write at exit");
    }
    return ok();
}

}  // namespace keel::trace
