// The device conformance suite: one GoogleTest suite, `Conformance`,
// parametrised over every device that loads. Each file adds TEST_Ps to it;
// conformance_main.cpp instantiates it once for all of them.
//
// Devices come from one Runtime for the whole run: the default search path
// (build tree, install, KEEL_PLUGIN_PATH) plus KEEL_CONFORMANCE_PLUGIN_PATH
// given at build time (the fake test plugin, unless switched off).
//
// A device that differs from the contract declares it INSIDE the test with
// KEEL_KNOWN_DIFFERENCE(condition, reason): the test is then skipped on that
// device, with the reason, instead of being deleted.
#pragma once

#include <keel/keel.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

namespace keel::conformance {

// The Runtime shared by the suite (created on first use).
const Runtime& runtime();
// Names of every device of runtime(), for the parametrisation.
std::vector<std::string> device_names();

class Conformance : public ::testing::TestWithParam<std::string> {
protected:
    // The device under test.
    [[nodiscard]] const Device& device() const;
    // Another device (of any plugin), or null when only one device loaded.
    [[nodiscard]] const Device* other_device() const;
};

// The test name part for a device: "cpu:0" -> "cpu_0".
std::string instance_name(const ::testing::TestParamInfo<std::string>& info);

}  // namespace keel::conformance

#define KEEL_ASSERT_OK(expr)                                                          \
    do {                                                                              \
        auto&& keel_r_ = (expr);                                                      \
        ASSERT_TRUE(keel_r_.ok()) << #expr << ": " << keel_r_.error().message();      \
    } while (0)

#define KEEL_EXPECT_OK(expr)                                                          \
    do {                                                                              \
        auto&& keel_r_ = (expr);                                                      \
        EXPECT_TRUE(keel_r_.ok()) << #expr << ": " << keel_r_.error().message();      \
    } while (0)

// decl = value of expr, or fail the test (in a void function).
#define KEEL_ASSERT_OK_AND_ASSIGN(decl, expr) \
    KEEL_ASSERT_OK_AND_ASSIGN_IMPL(KEEL_CONCAT(keel_assert_tmp_, __LINE__), decl, expr)
#define KEEL_ASSERT_OK_AND_ASSIGN_IMPL(tmp, decl, expr)                     \
    auto tmp = (expr);                                                      \
    ASSERT_TRUE(tmp.ok()) << #expr << ": " << tmp.error().message();        \
    decl = std::move(tmp).value()

// Fails unless `expr` is an error with `status`.
#define KEEL_EXPECT_ERROR(expr, status)                                                    \
    do {                                                                                   \
        auto&& keel_r_ = (expr);                                                           \
        EXPECT_FALSE(keel_r_.ok()) << #expr << " succeeded";                               \
        if (!keel_r_.ok()) {                                                               \
            EXPECT_EQ(keel_r_.error().code(), status)                                      \
                << #expr << ": " << ::keel::status_name(keel_r_.error().code()) << ": "    \
                << keel_r_.error().message();                                              \
        }                                                                                  \
    } while (0)

// Declares that the device under test differs from the contract here.
#define KEEL_KNOWN_DIFFERENCE(condition, reason)                                          \
    if (condition)                                                                         \
    GTEST_SKIP() << "known difference of " << device().name() << ": " << reason

namespace keel::conformance {

// Holds a stream at a point until open() (or destruction): a host function
// that waits. If a plugin ran work inline, enqueueing it would block the
// test thread; the wait then gives up after `patience`, and timed_out()
// reports the bug (the test fails instead of hanging).
class Gate {
public:
    explicit Gate(std::chrono::milliseconds patience = std::chrono::seconds(10))
        : state_(std::make_shared<State>()), patience_(patience) {
        state_->released = state_->release.get_future().share();
    }
    Gate(const Gate&) = delete;
    Gate& operator=(const Gate&) = delete;
    Gate(Gate&&) = delete;
    Gate& operator=(Gate&&) = delete;
    ~Gate() {
        open();
        // Set only when hold() itself waited: the work ran inline.
        if (timed_out()) ADD_FAILURE() << "the plugin ran a gated host function inline, at enqueue";
    }

    // Enqueues the waiting host function on `stream`.
    [[nodiscard]] Result<void> hold(const Stream& stream) {
        return stream.enqueue_host_func(
            [state = state_, patience = patience_] {
                state->entered.store(true);
                if (state->released.wait_for(patience) == std::future_status::timeout)
                    state->timed_out.store(true);
            });
    }
    void open() {
        if (!state_->opened.exchange(true)) state_->release.set_value();
    }
    [[nodiscard]] bool timed_out() const { return state_->timed_out.load(); }

private:
    struct State {
        std::promise<void> release;
        std::shared_future<void> released;
        std::atomic<bool> opened{false};
        std::atomic<bool> entered{false};
        std::atomic<bool> timed_out{false};
    };
    std::shared_ptr<State> state_;
    std::chrono::milliseconds patience_;
};

}  // namespace keel::conformance
