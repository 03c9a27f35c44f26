#include "host_func_guard.hpp"

#include <keel/c_error.hpp>
#include "logger.hpp"

#include <keel/host_func.hpp>

#include <exception>
#include <memory>

namespace keel::detail {

thread_local int t_host_func_depth = 0;

namespace {

struct HostFuncScope {
    HostFuncScope() noexcept { ++t_host_func_depth; }
    ~HostFuncScope() { --t_host_func_depth; }
    HostFuncScope(const HostFuncScope&) = delete;
    HostFuncScope& operator=(const HostFuncScope&) = delete;
    HostFuncScope(HostFuncScope&&) = delete;
    HostFuncScope& operator=(HostFuncScope&&) = delete;
};
}  // namespace

void host_func_trampoline(void* user_data, keel_status status) noexcept {
    HostFuncScope scope;
    // Destroyed inside the scope: a callable's destructor is user code too.
    std::unique_ptr<HostFuncBase> fn(static_cast<HostFuncBase*>(user_data));
    if (!fn) return;
    try {
        Result<void> r = fn->invoke(status);
        if (!r.ok())
            logger()->error("[Stream::enqueue_host_func] a host function failed where its stream cannot be failed "
                            "(the plugin has no stream_enqueue_fallible_host_func): {}",
                            r.error().message());
    } catch (const std::exception& e) {
        logger()->error("[Stream::enqueue_host_func] host function threw: {}", e.what());
    } catch (...) {
        logger()->error("[Stream::enqueue_host_func] host function threw a non-standard exception");
    }
}

keel_error* fallible_host_func_trampoline(void* user_data, keel_status status) noexcept {
    HostFuncScope scope;
    std::unique_ptr<HostFuncBase> fn(static_cast<HostFuncBase*>(user_data));
    if (!fn) return nullptr;
    try {
        Result<void> r = fn->invoke(status);
        fn.reset();  // user code too: destroyed inside the scope
        if (r.ok()) return nullptr;
        return to_c_error(std::move(r).error());
    } catch (const std::exception& e) {
        logger()->error("[Stream::enqueue_host_func] host function threw: {}", e.what());
    } catch (...) {
        logger()->error("[Stream::enqueue_host_func] host function threw a non-standard exception");
    }
    return nullptr;
}

}  // namespace keel::detail
