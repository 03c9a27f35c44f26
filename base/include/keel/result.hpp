// Result<T>: the return type of every fallible keel call (runtime and plugins).
// Header-only (keel::base), so plugins use it without linking the runtime.
#pragma once

#include <keel/keel.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
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
        // Appended in order into one reserved string: GCC 12 at -O3 warns
        // (-Wrestrict, a false positive) on "[" + std::string(...) + ... here.
        std::string prefixed;
        prefixed.reserve(where.size() + 3 + message_.size());
        prefixed.append("[").append(where).append("] ").append(message_);
        message_ = std::move(prefixed);
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

namespace detail {

// Misuse of a Result (its value taken while it holds an error, or its error
// while it holds a value) stops the program loudly, in every build type, as
// Rust's unwrap does: the program cannot go on without the value, and
// undefined behaviour would hide where it went wrong.
[[noreturn, gnu::cold, gnu::noinline]] inline void result_misuse(const char* what, const Error* error,
                                                                 std::string_view context,
                                                                 const std::source_location& where) {
    std::fflush(stdout);
    if (!context.empty())
        std::fprintf(stderr, "keel: %.*s: ", static_cast<int>(context.size()), context.data());
    else
        std::fprintf(stderr, "keel: %s ", what);
    if (error != nullptr)
        std::fprintf(stderr, "%s: %s", status_name(error->code()), error->message().c_str());
    else
        std::fprintf(stderr, "the Result holds a value, not an error");
    if (where.line() != 0)
        std::fprintf(stderr, "\n  at %s:%u (%s)\n", where.file_name(), static_cast<unsigned>(where.line()),
                     where.function_name());
    else
        std::fprintf(stderr, "\n  (an operator has no caller location: call value() to get one)\n");
    std::fflush(stderr);
    std::abort();
}

}  // namespace detail

// Either a T or an Error, like Rust's Result<T, Error>. Never throws. Taking
// the value of an error (value(), *, ->, expect()) or the error of a value
// (error()) prints the error and where it was taken to stderr and aborts,
// in every build type.
template <class T>
class [[nodiscard]] Result {
public:
    using value_type = T;

    Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit like Ok(..)
    Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit like Err(..)

    [[nodiscard]] bool ok() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return ok(); }

    [[nodiscard]] T& value(const std::source_location& where = std::source_location::current()) & {
        check_value("Result::value() on an error:", {}, where);
        return *std::get_if<0>(&v_);
    }
    [[nodiscard]] const T& value(const std::source_location& where = std::source_location::current()) const& {
        check_value("Result::value() on an error:", {}, where);
        return *std::get_if<0>(&v_);
    }
    [[nodiscard]] T&& value(const std::source_location& where = std::source_location::current()) && {
        check_value("Result::value() on an error:", {}, where);
        return std::move(*std::get_if<0>(&v_));
    }
    // The value; on an error, stops the program with `context` and the error
    // ("loading the model: NOT_FOUND: [Runtime::device] ...").
    [[nodiscard]] T&& expect(std::string_view context,
                             const std::source_location& where = std::source_location::current()) && {
        check_value("", context, where);
        return std::move(*std::get_if<0>(&v_));
    }
    [[nodiscard]] T& expect(std::string_view context,
                            const std::source_location& where = std::source_location::current()) & {
        check_value("", context, where);
        return *std::get_if<0>(&v_);
    }

    // Operators cannot take the caller's location (C++ allows no default
    // arguments on them); they check all the same.
    T& operator*() & { return value(no_location()); }
    const T& operator*() const& { return value(no_location()); }
    T&& operator*() && { return std::move(*this).value(no_location()); }
    T* operator->() { return &value(no_location()); }
    const T* operator->() const { return &value(no_location()); }

    [[nodiscard]] const Error& error(const std::source_location& where = std::source_location::current()) const& {
        if (ok()) [[unlikely]]
            detail::result_misuse("Result::error() on a success:", nullptr, {}, where);
        return *std::get_if<1>(&v_);
    }
    [[nodiscard]] Error&& error(const std::source_location& where = std::source_location::current()) && {
        if (ok()) [[unlikely]]
            detail::result_misuse("Result::error() on a success:", nullptr, {}, where);
        return std::move(*std::get_if<1>(&v_));
    }

    // The value, or `fallback` on error.
    [[nodiscard]] T value_or(T fallback) && {
        return ok() ? std::move(*std::get_if<0>(&v_)) : std::move(fallback);
    }

private:
    static constexpr std::source_location no_location() noexcept { return {}; }
    void check_value(const char* what, std::string_view context, const std::source_location& where) const {
        if (!ok()) [[unlikely]]
            detail::result_misuse(what, std::get_if<1>(&v_), context, where);
    }

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

    // Stops the program with the error unless this is a success.
    void value(const std::source_location& where = std::source_location::current()) const {
        if (!ok()) [[unlikely]]
            detail::result_misuse("Result::value() on an error:", &*error_, {}, where);
    }
    void expect(std::string_view context,
                const std::source_location& where = std::source_location::current()) const {
        if (!ok()) [[unlikely]]
            detail::result_misuse("", &*error_, context, where);
    }

    [[nodiscard]] const Error& error(const std::source_location& where = std::source_location::current()) const& {
        if (ok()) [[unlikely]]
            detail::result_misuse("Result::error() on a success:", nullptr, {}, where);
        return *error_;
    }
    [[nodiscard]] Error&& error(const std::source_location& where = std::source_location::current()) && {
        if (ok()) [[unlikely]]
            detail::result_misuse("Result::error() on a success:", nullptr, {}, where);
        return std::move(*error_);
    }

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
