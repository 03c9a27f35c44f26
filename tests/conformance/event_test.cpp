// Events: completion, cross-stream waits (device-side fences), timing.
#include "conformance.hpp"

#include <cstdint>
#include <thread>
#include <vector>

namespace keel::conformance {
namespace {

using Bytes = std::vector<std::uint8_t>;

TEST_P(Conformance, AnEventNeverRecordedIsComplete) {
    KEEL_ASSERT_OK_AND_ASSIGN(Event e, Event::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(bool done, e.query());
    EXPECT_TRUE(done);
    KEEL_EXPECT_OK(e.synchronize());
}

TEST_P(Conformance, AnEventCompletesWhenItsStreamReachesIt) {
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event e, Event::create(device()));
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(s));
    KEEL_ASSERT_OK(e.record(s));
    KEEL_ASSERT_OK_AND_ASSIGN(bool before, e.query());
    EXPECT_FALSE(before);
    gate.open();
    KEEL_ASSERT_OK(e.synchronize());
    EXPECT_FALSE(gate.timed_out()) << "the plugin ran the host function inline, at enqueue";
    KEEL_ASSERT_OK_AND_ASSIGN(bool after, e.query());
    EXPECT_TRUE(after);
}

TEST_P(Conformance, ReRecordingAnEventMovesTheCapturedPoint) {
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event e, Event::create(device()));
    KEEL_ASSERT_OK(e.record(s));
    KEEL_ASSERT_OK(e.synchronize());
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(s));
    KEEL_ASSERT_OK(e.record(s));
    KEEL_ASSERT_OK_AND_ASSIGN(bool done, e.query());
    EXPECT_FALSE(done) << "queries observe the most recent record";
    gate.open();
    KEEL_ASSERT_OK(e.synchronize());
}

TEST_P(Conformance, AStreamWaitingOnAnEventRunsNothingBeforeTheEventCompletes) {
    KEEL_KNOWN_DIFFERENCE(!device().has(DeviceCapability::concurrent_streams),
                          "its streams do not run concurrently, so a gated stream stalls the other");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream a, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream b, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event e, Event::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer buf, DeviceBuffer::allocate(device(), 1024));
    KEEL_ASSERT_OK(b.memset(buf, 0));
    KEEL_ASSERT_OK(b.synchronize());

    Bytes pattern(1024, 0x11), out(1024, 0xee);
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(a));
    KEEL_ASSERT_OK(a.copy_h2d(buf, pattern.data(), pattern.size()));
    KEEL_ASSERT_OK(e.record(a));
    KEEL_ASSERT_OK(b.wait(e));  // returns at once: the host does not block
    KEEL_ASSERT_OK(b.copy_d2h(out.data(), buf, out.size()));

    // Give a wrong implementation time to run b's copy early.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    KEEL_ASSERT_OK_AND_ASSIGN(bool b_done, b.query());
    EXPECT_FALSE(b_done) << "b ran past its wait while the event was pending";
    EXPECT_EQ(out, Bytes(1024, 0xee)) << "b's copy ran before the event completed";

    gate.open();
    KEEL_ASSERT_OK(b.synchronize());
    EXPECT_FALSE(gate.timed_out()) << "the plugin ran the host function inline, at enqueue";
    EXPECT_EQ(out, pattern) << "b's copy must see a's copy, which precedes the event";
}

TEST_P(Conformance, AWaitOnAnEventOfTheSameStreamIsHarmless) {
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event e, Event::create(device()));
    int ran = 0;
    KEEL_ASSERT_OK(s.enqueue_host_func([&] { ++ran; }));
    KEEL_ASSERT_OK(e.record(s));
    KEEL_ASSERT_OK(s.wait(e));
    KEEL_ASSERT_OK(s.enqueue_host_func([&] { ++ran; }));
    KEEL_ASSERT_OK(s.synchronize());
    EXPECT_EQ(ran, 2);
}

TEST_P(Conformance, DestroyingAnEventWithAPendingRecordIsHarmless) {
    KEEL_ASSERT_OK_AND_ASSIGN(Stream a, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream b, Stream::create(device()));
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(a));
    {
        KEEL_ASSERT_OK_AND_ASSIGN(Event e, Event::create(device()));
        KEEL_ASSERT_OK(e.record(a));
        KEEL_ASSERT_OK(b.wait(e));
    }  // destroyed while pending; b's wait stays valid
    int ran = 0;
    KEEL_ASSERT_OK(b.enqueue_host_func([&] { ++ran; }));
    gate.open();
    KEEL_ASSERT_OK(b.synchronize());
    KEEL_ASSERT_OK(a.synchronize());
    EXPECT_EQ(ran, 1);
}

TEST_P(Conformance, ElapsedTimeCoversTheWorkBetweenTwoTimingEvents) {
    if (!device().has(DeviceCapability::event_timing))
        GTEST_SKIP() << device().name() << " does not offer event timing (optional capability)";
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event start, Event::create(device(), EventTiming::on));
    KEEL_ASSERT_OK_AND_ASSIGN(Event end, Event::create(device(), EventTiming::on));
    KEEL_ASSERT_OK(start.record(s));
    KEEL_ASSERT_OK(s.enqueue_host_func([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }));
    KEEL_ASSERT_OK(end.record(s));
    KEEL_ASSERT_OK(end.synchronize());
    KEEL_ASSERT_OK_AND_ASSIGN(float ms, Event::elapsed_ms(start, end));
    // Not a speed check: the interval must contain the 20 ms the stream slept.
    EXPECT_GE(ms, 19.0f);
    KEEL_ASSERT_OK_AND_ASSIGN(float zero, Event::elapsed_ms(start, start));
    EXPECT_EQ(zero, 0.0f);
}

TEST_P(Conformance, ElapsedTimeNeedsEventsCreatedWithTiming) {
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event a, Event::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event b, Event::create(device()));
    KEEL_ASSERT_OK(a.record(s));
    KEEL_ASSERT_OK(b.record(s));
    KEEL_ASSERT_OK(b.synchronize());
    KEEL_EXPECT_ERROR(Event::elapsed_ms(a, b), KEEL_STATUS_FAILED_PRECONDITION);
}

TEST_P(Conformance, EventsAndStreamsOfDifferentDevicesAreNotMixed) {
    const Device* other = other_device();
    if (other == nullptr) GTEST_SKIP() << "needs a second device";
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event foreign, Event::create(*other));
    KEEL_EXPECT_ERROR(foreign.record(s), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.wait(foreign), KEEL_STATUS_UNIMPLEMENTED);
}

}  // namespace
}  // namespace keel::conformance
