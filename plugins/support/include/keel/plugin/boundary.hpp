// The one place where a plugin's C++ code meets the C ABI: no exception ever
// escapes an entry point, and a failed Result becomes a keel_error*
// (keel::make_c_error, <keel/c_error.hpp>).
#pragma once

#include <keel/c_error.hpp>
#include <keel/keel.h>
#include <keel/result.hpp>

#include <new>
#include <string>
#include <utility>

namespace keel::plugin {

// Runs `body` (returning Result<void>) at an ABI entry point named
// `plugin` + " " + `name` ("cuda device_get"; `name` may be null).
// Errors become a keel_error* whose message starts with "[cuda device_get] ";
// exceptions (std::bad_alloc, bugs) are caught and reported, never
// propagated. The name is only put together when there is an error.
template <class Body>
[[nodiscard]] keel_error* entry(const char* plugin, const char* name, Body&& body) noexcept {
    const auto where = [&] {
        return "[" + std::string(plugin) + (name != nullptr ? " " + std::string(name) : std::string()) + "] ";
    };
    try {
        Result<void> r = body();
        if (r.ok()) return nullptr;
        Error e = std::move(r).error();
        return make_c_error(e.code(), where() + e.message());
    } catch (const std::bad_alloc&) {
        return make_c_error(KEEL_STATUS_OUT_OF_MEMORY, where() + "host allocation failed");
    } catch (const std::exception& ex) {
        return make_c_error(KEEL_STATUS_INTERNAL, where() + "unexpected exception: " + ex.what());
    } catch (...) {
        return make_c_error(KEEL_STATUS_INTERNAL, where() + "unexpected exception");
    }
}

// The same at an entry named by one string (`where`: "cuda device_get").
template <class Body>
[[nodiscard]] keel_error* entry(const char* where, Body&& body) noexcept {
    return entry(where, nullptr, std::forward<Body>(body));
}

// Fails with INVALID_ARGUMENT naming `what` when `p` is null.
template <class P>
[[nodiscard]] Result<void> require_non_null(const P* p, const char* what) {
    if (p == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(what) + " is null");
    return ok();
}

}  // namespace keel::plugin
