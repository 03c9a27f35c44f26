// A host function that fails its stream (keel.h, "ABI 1.4: host functions
// that fail their stream"): the stream fails at that point, sticky, and the
// work and events before it are untouched. The runtime reaches the entry
// through Stream::enqueue_host_func with a callable returning Result<void>.
#include "conformance.hpp"

#include <atomic>
#include <string>

namespace keel::conformance {
namespace {

TEST_P(Conformance, AFailingHostFunctionFailsItsStreamFromThatPointOn) {
    KEEL_RULE(4, "host-func.fallible");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    if (!s.host_funcs_can_fail())
        GTEST_SKIP() << device().name() << " has no stream_enqueue_fallible_host_func (optional)";
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, 256));
    KEEL_ASSERT_OK_AND_ASSIGN(Event before, Event::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event after, Event::create(device()));
    std::atomic<int> healthy_ran{0};
    std::atomic<int> later_status{-1};
    // Held until everything is enqueued: a stream already known to have
    // failed refuses enqueues, so the failure must not run before them.
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(s));
    KEEL_ASSERT_OK(s.memset(b, 7));
    // A host function that returns success leaves the stream healthy.
    KEEL_ASSERT_OK(s.enqueue_host_func([&](Status status) -> Result<void> {
        if (status == KEEL_STATUS_OK) ++healthy_ran;
        return {};
    }));
    KEEL_ASSERT_OK(before.record(s));
    KEEL_ASSERT_OK(s.enqueue_host_func(
        []() -> Result<void> { return Error(KEEL_STATUS_UNAVAILABLE, "planted host function failure 4711"); }));
    KEEL_ASSERT_OK(after.record(s));
    KEEL_ASSERT_OK(s.enqueue_host_func([&](Status status) { later_status = static_cast<int>(status); }));
    gate.open();

    auto synced = s.synchronize();
    ASSERT_FALSE(synced.ok()) << "the stream went on after its host function failed";
    EXPECT_EQ(synced.error().code(), KEEL_STATUS_UNAVAILABLE);
    EXPECT_NE(synced.error().message().find("planted host function failure 4711"), std::string::npos)
        << synced.error().message();
    EXPECT_EQ(healthy_ran.load(), 1);
    EXPECT_NE(later_status.load(), static_cast<int>(KEEL_STATUS_OK)) << "a later host function saw no error";
    EXPECT_NE(later_status.load(), -1) << "a later host function never ran";
    KEEL_EXPECT_OK(before.synchronize());
    auto after_synced = after.synchronize();
    EXPECT_FALSE(after_synced.ok()) << "an event recorded after the failure reports success";
    auto queried = s.query();
    EXPECT_FALSE(queried.ok()) << "stream_query reports no error";
    EXPECT_FALSE(s.memset(b, 1).ok()) << "an enqueue on the failed stream was accepted";
}

}  // namespace
}  // namespace keel::conformance
