// Result<T>: the return type of every fallible keel call (runtime and plugins).
// Header-only so plugins can use it without linking the runtime.
#pragma once

#include <keel/keel.h>

#include <cassert>
#include <optional>
#include <string_view>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace keel {

using Status = keel_status;

// What went wrong: a code, a message that starts with where it came from
// ("[Stream::wait] ..."), and nothing else. Cheap to move.
class Error {
public:
    Error(Status code, std::string message) : code_(code), message_(std::move(message)) {}

    [[nodiscard]] Status code() const noexcept { return code_; }
    [[nodiscard]] const std::string& message() const noexcept { return message_; }

    // Prefixes the message with a caller's context: "[ctx] " + message.
    [[nodiscard]] Error context(std::string_view where) && {
        message_ = "[" + std::string(where) + "] " + message_;
        return std::move(*this);
    }

private:
    Status code_;
    std::string message_;
};

// Human-readable name of a status ("OUT_OF_MEMORY").
[[nodiscard]] constexpr const char* status_name(Status s) noexcept {
    switch (s) {
        case KEEL_STATUS_OK: return "OK";
        case KEEL_STATUS_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
        case KEEL_STATUS_NOT_FOUND: return "NOT_FOUND";
        case KEEL_STATUS_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
        case KEEL_STATUS_UNIMPLEMENTED: return "UNIMPLEMENTED";
        case KEEL_STATUS_UNAVAILABLE: return "UNAVAILABLE";
        case KEEL_STATUS_VERSION_MISMATCH: return "VERSION_MISMATCH";
        case KEEL_STATUS_DEVICE_ERROR: return "DEVICE_ERROR";
        case KEEL_STATUS_OUT_OF_RANGE: return "OUT_OF_RANGE";
        case KEEL_STATUS_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
        case KEEL_STATUS_INTERNAL: return "INTERNAL";
        default: return "UNKNOWN";
    }
}

// Either a T or an Error, like Rust's Result<T, Error>. Never throws:
// accessing the wrong alternative is a programming error (asserted).
template <class T>
class [[nodiscard]] Result {
public:
    using value_type = T;

    Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit like Ok(..)
    Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit like Err(..)

    [[nodiscard]] bool ok() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return ok(); }

    [[nodiscard]] T& value() & { assert(ok()); return *std::get_if<0>(&v_); }
    [[nodiscard]] const T& value() const& { assert(ok()); return *std::get_if<0>(&v_); }
    [[nodiscard]] T&& value() && { assert(ok()); return std::move(*std::get_if<0>(&v_)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T&& operator*() && { return std::move(*this).value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    [[nodiscard]] const Error& error() const& { assert(!ok()); return *std::get_if<1>(&v_); }
    [[nodiscard]] Error&& error() && { assert(!ok()); return std::move(*std::get_if<1>(&v_)); }

    // The value, or `fallback` on error.
    [[nodiscard]] T value_or(T fallback) && { return ok() ? std::move(value()) : std::move(fallback); }

private:
    std::variant<T, Error> v_;
};

// Result of an operation that produces nothing.
template <>
class [[nodiscard]] Result<void> {
public:
    using value_type = void;

    Result() = default;
    Result(Error error) : error_(std::in_place, std::move(error)) {}  // NOLINT

    [[nodiscard]] bool ok() const noexcept { return !error_.has_value(); }
    explicit operator bool() const noexcept { return ok(); }
    void value() const { assert(ok()); }

    [[nodiscard]] const Error& error() const& { assert(!ok()); return *error_; }
    [[nodiscard]] Error&& error() && { assert(!ok()); return std::move(*error_); }

private:
    std::optional<Error> error_;
};

inline Result<void> ok() { return {}; }

}  // namespace keel

#define KEEL_CONCAT_IMPL(a, b) a##b
#define KEEL_CONCAT(a, b) KEEL_CONCAT_IMPL(a, b)

// Returns the error of `expr` (a Result) from the enclosing function.
#define KEEL_TRY(expr)                                          \
    do {                                                        \
        auto&& keel_try_result_ = (expr);                       \
        if (!keel_try_result_.ok())                             \
            return std::move(keel_try_result_).error();         \
    } while (0)

// `decl = value of expr`, or return its error: KEEL_TRY_ASSIGN(auto x, f());
#define KEEL_TRY_ASSIGN(decl, expr) \
    KEEL_TRY_ASSIGN_IMPL(KEEL_CONCAT(keel_try_tmp_, __LINE__), decl, expr)
#define KEEL_TRY_ASSIGN_IMPL(tmp, decl, expr)      \
    auto tmp = (expr);                             \
    if (!tmp.ok()) return std::move(tmp).error();  \
    decl = std::move(tmp).value()
