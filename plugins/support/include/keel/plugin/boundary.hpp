// The one place where a plugin's C++ code meets the C ABI: Result -> keel_error*,
// and no exception ever escapes an entry point.
#pragma once

#include <keel/keel.h>
#include <keel/result.hpp>

#include <new>
#include <string>
#include <utility>

namespace keel::plugin {

// A heap-allocated keel_error that owns its message; released by its own destroy.
[[nodiscard]] keel_error* make_c_error(Status code, std::string message) noexcept;

[[nodiscard]] inline keel_error* to_c_error(Error error) noexcept {
    return make_c_error(error.code(), std::move(error).message());
}

// The other way, for an error a caller handed over (a fallible host
// function's): ok() for NULL, else its code and message; destroys it.
[[nodiscard]] inline Result<void> take_c_error(keel_error* error) noexcept {
    if (error == nullptr) return ok();
    struct Destroy {
        keel_error* e;
        ~Destroy() { keel_error_destroy(e); }
    } destroy{error};
    // An error whose code says OK is still an error: the caller returned one.
    const Status code = error->code == KEEL_STATUS_OK ? KEEL_STATUS_INTERNAL : error->code;
    try {
        return Error(code, error->message != nullptr ? error->message : "(no message)");
    } catch (...) {
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "out of memory while reading an error");
    }
}

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
