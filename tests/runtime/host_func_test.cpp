// HostFunc and the trampoline that runs it: the callable is owned and
// destroyed exactly once, exceptions do not escape, and calls into keel from
// inside it are detectable.
#include "access.hpp"
#include "host_func_guard.hpp"

#include <keel/host_func.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

namespace keel::detail {
namespace {

TEST(HostFunc, TheTrampolineRunsTheCallableWithTheStatusAndDestroysIt) {
    auto token = std::make_shared<int>(0);
    Status seen = KEEL_STATUS_INTERNAL;
    HostFunc fn([token, &seen](Status s) {
        seen = s;
        ++*token;
    });
    EXPECT_EQ(token.use_count(), 2);
    host_func_trampoline(Access::take(std::move(fn)).release(), KEEL_STATUS_DEVICE_ERROR);
    EXPECT_EQ(seen, KEEL_STATUS_DEVICE_ERROR) << "the stream's error is passed on";
    EXPECT_EQ(*token, 1);
    EXPECT_EQ(token.use_count(), 1) << "destroyed after running";
}

TEST(HostFunc, CallablesWithoutAStatusParameterAreAccepted) {
    int ran = 0;
    HostFunc fn([&ran] { ++ran; });
    host_func_trampoline(Access::take(std::move(fn)).release(), KEEL_STATUS_OK);
    EXPECT_EQ(ran, 1);
}

TEST(HostFunc, AnExceptionFromTheCallableIsCaughtAndTheCallableStillDestroyed) {
    auto token = std::make_shared<int>(0);
    HostFunc fn([token] { throw std::runtime_error("boom"); });
    host_func_trampoline(Access::take(std::move(fn)).release(), KEEL_STATUS_OK);
    EXPECT_EQ(token.use_count(), 1);
}

TEST(HostFunc, TheThreadIsMarkedWhileTheCallableRunsAndIsDestroyed) {
    struct Probe {
        bool* in_destructor;
        ~Probe() { *in_destructor = in_host_func(); }
    };
    bool during = false, in_destructor = false;
    {
        HostFunc fn([&during, p = std::make_shared<Probe>(Probe{&in_destructor})] { during = in_host_func(); });
        host_func_trampoline(Access::take(std::move(fn)).release(), KEEL_STATUS_OK);
    }
    EXPECT_TRUE(during);
    EXPECT_TRUE(in_destructor);
    EXPECT_FALSE(in_host_func());
}

TEST(HostFunc, AFailingCallableBecomesTheErrorTheFallibleTrampolineHandsTheStream) {
    auto token = std::make_shared<int>(0);
    HostFunc fn([token](Status) -> Result<void> { return Error(KEEL_STATUS_UNAVAILABLE, "peer 3 went away"); });
    EXPECT_TRUE(fn.fallible());
    keel_error* e = fallible_host_func_trampoline(Access::take(std::move(fn)).release(), KEEL_STATUS_OK);
    ASSERT_NE(e, nullptr) << "the error was lost";
    EXPECT_EQ(e->code, KEEL_STATUS_UNAVAILABLE);
    EXPECT_STREQ(e->message, "peer 3 went away");
    keel_error_destroy(e);
    EXPECT_EQ(token.use_count(), 1) << "destroyed after running";
}

TEST(HostFunc, ASucceedingOrPlainCallableGivesTheFallibleTrampolineNoError) {
    int ran = 0;
    HostFunc ok_fn([&ran]() -> Result<void> {
        ++ran;
        return {};
    });
    HostFunc plain([&ran] { ++ran; });
    EXPECT_FALSE(plain.fallible());
    EXPECT_EQ(fallible_host_func_trampoline(Access::take(std::move(ok_fn)).release(), KEEL_STATUS_OK), nullptr);
    EXPECT_EQ(fallible_host_func_trampoline(Access::take(std::move(plain)).release(), KEEL_STATUS_OK), nullptr);
    EXPECT_EQ(ran, 2);
}

TEST(HostFunc, AFailingCallableRunByThePlainTrampolineIsLoggedNotLost) {
    // A plugin without the 1.4 entry: the callable still runs, its error
    // goes to the log (the stream cannot take it).
    int ran = 0;
    HostFunc fn([&ran]() -> Result<void> {
        ++ran;
        return Error(KEEL_STATUS_UNAVAILABLE, "nobody can take this");
    });
    host_func_trampoline(Access::take(std::move(fn)).release(), KEEL_STATUS_OK);
    EXPECT_EQ(ran, 1);
}

TEST(HostFunc, AMovedFromHostFuncIsEmpty) {
    HostFunc fn([] {});
    HostFunc other = std::move(fn);
    EXPECT_FALSE(fn);  // NOLINT: inspecting the moved-from state
    EXPECT_TRUE(other);
    EXPECT_EQ(Access::take(std::move(fn)), nullptr);  // NOLINT
    EXPECT_NE(Access::take(std::move(other)), nullptr);
}

TEST(HostFunc, RunCallsOnceThenDestroysWhatItCaptured) {
    auto token = std::make_shared<int>(0);
    int ran = 0;
    HostFunc fn([token, &ran] { ++ran; });
    fn.run();
    EXPECT_EQ(ran, 1);
    EXPECT_EQ(token.use_count(), 1) << "destroyed after running";
    EXPECT_FALSE(fn);
    fn.run();  // empty: nothing
    EXPECT_EQ(ran, 1);
}

TEST(HostFunc, OwningKeepsObjectsUntilItIsRunOrDropped) {
    auto token = std::make_shared<int>(0);
    HostFunc held = owning(token, std::make_unique<int>(7));
    EXPECT_EQ(token.use_count(), 2);
    held.run();
    EXPECT_EQ(token.use_count(), 1);
    {
        HostFunc dropped = owning(token);
        EXPECT_EQ(token.use_count(), 2);
    }
    EXPECT_EQ(token.use_count(), 1) << "a HostFunc that never runs still releases what it owns";
}

}  // namespace
}  // namespace keel::detail
