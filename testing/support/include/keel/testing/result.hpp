// GoogleTest assertions on keel's two ways of reporting an outcome, with one
// meaning: "the operation succeeded" (or failed with a given status). Each
// takes a keel::Result<T> (any T) or a keel_error* from a plugin's C table
// (which it destroys), and prints the status name and message otherwise.
//
//   KEEL_ASSERT_OK(stream.synchronize());
//   KEEL_EXPECT_OK(api.stream_synchronize(s));
//   KEEL_ASSERT_OK_AND_ASSIGN(keel::Stream s, keel::Stream::create(device));
//   KEEL_EXPECT_ERROR(buffer.view(90, 20), KEEL_STATUS_OUT_OF_RANGE);
#pragma once

#include <keel/keel.h>
#include <keel/result.hpp>
#include <keel/testing/loaded_plugin.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <utility>

namespace keel::testing {

[[nodiscard]] inline ::testing::AssertionResult succeeded(const std::optional<CError>& error) {
    if (!error) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << status_name(error->code) << ": " << error->message;
}
[[nodiscard]] inline ::testing::AssertionResult succeeded(keel_error* error) { return succeeded(take(error)); }
template <class T>
[[nodiscard]] ::testing::AssertionResult succeeded(const Result<T>& r) {
    if (r.ok()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << status_name(r.error().code()) << ": " << r.error().message();
}

[[nodiscard]] inline ::testing::AssertionResult failed_with(const std::optional<CError>& error, Status status) {
    if (!error) return ::testing::AssertionFailure() << "succeeded, expected " << status_name(status);
    if (error->code != status)
        return ::testing::AssertionFailure() << status_name(error->code) << " (expected " << status_name(status)
                                             << "): " << error->message;
    return ::testing::AssertionSuccess();
}
[[nodiscard]] inline ::testing::AssertionResult failed_with(keel_error* error, Status status) {
    return failed_with(take(error), status);
}
template <class T>
[[nodiscard]] ::testing::AssertionResult failed_with(const Result<T>& r, Status status) {
    if (r.ok()) return ::testing::AssertionFailure() << "succeeded, expected " << status_name(status);
    return failed_with(std::optional<CError>(CError{r.error().code(), r.error().message()}), status);
}

}  // namespace keel::testing

#define KEEL_ASSERT_OK(expr) ASSERT_TRUE(::keel::testing::succeeded(expr)) << "  in: " #expr
#define KEEL_EXPECT_OK(expr) EXPECT_TRUE(::keel::testing::succeeded(expr)) << "  in: " #expr
// Fails unless `expr` is an error of `status`.
#define KEEL_EXPECT_ERROR(expr, status) \
    EXPECT_TRUE(::keel::testing::failed_with((expr), (status))) << "  in: " #expr
#define KEEL_ASSERT_ERROR(expr, status) \
    ASSERT_TRUE(::keel::testing::failed_with((expr), (status))) << "  in: " #expr

// `decl = value of expr` (a keel::Result), or fail the test (in a function
// returning void).
#define KEEL_ASSERT_OK_AND_ASSIGN(decl, expr) \
    KEEL_ASSERT_OK_AND_ASSIGN_IMPL(KEEL_CONCAT(keel_assert_tmp_, __LINE__), decl, expr)
#define KEEL_ASSERT_OK_AND_ASSIGN_IMPL(tmp, decl, expr)                       \
    auto tmp = (expr);                                                        \
    ASSERT_TRUE(::keel::testing::succeeded(tmp)) << "  in: " #expr;          \
    decl = std::move(tmp).value()
