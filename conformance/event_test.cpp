// Events: completion, cross-stream waits (device-side fences), timing.
#include "conformance.hpp"

#include <cstdint>
#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace keel::conformance {
namespace {

TEST_P(Conformance, AnEventNeverRecordedIsComplete) {
    KEEL_RULE(0, "event.query");
    KEEL_ASSERT_OK_AND_ASSIGN(Event e, Event::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(bool done, e.query());
    EXPECT_TRUE(done);
    KEEL_EXPECT_OK(e.synchronize());
}

TEST_P(Conformance, AnEventCompletesWhenItsStreamReachesIt) {
    KEEL_RULE(0, "event.record");
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
    KEEL_RULE(0, "event.record");
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
    KEEL_RULE(0, "stream.wait-event");
    KEEL_KNOWN_DIFFERENCE(!device().has(DeviceCapability::concurrent_streams),
                          "its streams do not run concurrently, so a gated stream stalls the other");
    KEEL_ASSERT_OK_AND_ASSIGN(PinnedBuffer out, PinnedBuffer::allocate(device(), 1024));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream a, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream b, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event e, Event::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(b, 1024));
    std::fill(out.as<std::uint8_t>().begin(), out.as<std::uint8_t>().end(), 0xee);
    KEEL_ASSERT_OK(b.memset(buf, 0));
    KEEL_ASSERT_OK(b.synchronize());

    const Bytes pattern(1024, 0x11);
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(a));
    KEEL_ASSERT_OK(a.copy(buf, pattern));
    KEEL_ASSERT_OK(buf.record_stream(a));
    KEEL_ASSERT_OK(e.record(a));
    KEEL_ASSERT_OK(b.wait(e));  // returns at once: the host does not block
    KEEL_ASSERT_OK(b.copy(out, buf));  // straight into pinned memory when it runs

    // Give a wrong implementation time to run b's copy early.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    KEEL_ASSERT_OK_AND_ASSIGN(bool b_done, b.query());
    EXPECT_FALSE(b_done) << "b ran past its wait while the event was pending";
    EXPECT_EQ(Bytes(out.as<std::uint8_t>().begin(), out.as<std::uint8_t>().end()), Bytes(1024, 0xee))
        << "b's copy ran before the event completed";

    gate.open();
    KEEL_ASSERT_OK(b.synchronize());
    EXPECT_FALSE(gate.timed_out()) << "the plugin ran the host function inline, at enqueue";
    EXPECT_EQ(Bytes(out.as<std::uint8_t>().begin(), out.as<std::uint8_t>().end()), pattern)
        << "b's copy must see a's copy, which precedes the event";
}

TEST_P(Conformance, AWaitOnAnEventOfTheSameStreamIsHarmless) {
    KEEL_RULE(0, "stream.wait-event");
    int ran = 0;
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event e, Event::create(device()));
    KEEL_ASSERT_OK(s.enqueue_host_func([&] { ++ran; }));
    KEEL_ASSERT_OK(e.record(s));
    KEEL_ASSERT_OK(s.wait(e));
    KEEL_ASSERT_OK(s.enqueue_host_func([&] { ++ran; }));
    KEEL_ASSERT_OK(s.synchronize());
    EXPECT_EQ(ran, 2);
}

TEST_P(Conformance, DestroyingAnEventWithAPendingRecordIsHarmless) {
    KEEL_RULE(0, "event.destroy-pending");
    int ran = 0;
    KEEL_ASSERT_OK_AND_ASSIGN(Stream a, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream b, Stream::create(device()));
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(a));
    {
        KEEL_ASSERT_OK_AND_ASSIGN(Event e, Event::create(device()));
        KEEL_ASSERT_OK(e.record(a));
        KEEL_ASSERT_OK(b.wait(e));
    }  // destroyed while pending; b's wait stays valid
    KEEL_ASSERT_OK(b.enqueue_host_func([&] { ++ran; }));
    gate.open();
    KEEL_ASSERT_OK(b.synchronize());
    KEEL_ASSERT_OK(a.synchronize());
    EXPECT_EQ(ran, 1);
}

TEST_P(Conformance, ElapsedTimeCoversTheWorkBetweenTwoTimingEvents) {
    KEEL_RULE(0, "event.elapsed-time");
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
    KEEL_RULE(1, "edge.elapsed-time-incomplete");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event a, Event::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event b, Event::create(device()));
    KEEL_ASSERT_OK(a.record(s));
    KEEL_ASSERT_OK(b.record(s));
    KEEL_ASSERT_OK(b.synchronize());
    KEEL_EXPECT_ERROR(Event::elapsed_ms(a, b), KEEL_STATUS_FAILED_PRECONDITION);
}

TEST_P(Conformance, EventsAndStreamsOfDifferentDevicesAreNotMixed) {
    KEEL_RULE(0, "handle.runtime-checks");
    const Device* other = other_device();
    if (other == nullptr) GTEST_SKIP() << "needs a second device";
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event foreign, Event::create(*other));
    KEEL_EXPECT_ERROR(foreign.record(s), KEEL_STATUS_INVALID_ARGUMENT);
    // A wait across devices is the runtime's (natively or bridged, since
    // 1.6): it never hands the plugin an event it cannot take.
    KEEL_EXPECT_OK(s.wait(foreign));
    KEEL_EXPECT_OK(s.synchronize());
}

TEST_P(Conformance, AFenceOrdersAnotherStreamWithoutBlockingTheHost) {
    KEEL_RULE(0, "stream.wait-event");
    KEEL_KNOWN_DIFFERENCE(!device().has(DeviceCapability::concurrent_streams),
                          "its streams do not run concurrently, so a gated stream stalls the other");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream a, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream b, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer x, Buffer::allocate(a, 4096));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer y, Buffer::allocate(b, 4096));
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(a));
    KEEL_ASSERT_OK(a.memset(x, 0x33));
    KEEL_ASSERT_OK_AND_ASSIGN(Fence fence, a.fence());
    KEEL_ASSERT_OK(b.wait(fence));
    KEEL_ASSERT_OK(b.copy(y, x));
    KEEL_ASSERT_OK(x.record_stream(b));
    // The host got here while a is held: nothing waited on the host.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    KEEL_ASSERT_OK_AND_ASSIGN(bool b_done, b.query());
    EXPECT_FALSE(b_done) << "b ran past the fence while a was held";
    gate.open();
    KEEL_ASSERT_OK_AND_ASSIGN(Bytes got, read_bytes(b, y));
    EXPECT_EQ(got, Bytes(4096, 0x33));
}

TEST_P(Conformance, OrderAfterIsAOneShotFence) {
    KEEL_RULE(0, "stream.wait-event");
    KEEL_KNOWN_DIFFERENCE(!device().has(DeviceCapability::concurrent_streams),
                          "its streams do not run concurrently, so a gated stream stalls the other");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream a, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream b, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer x, Buffer::allocate(a, 4096));
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(a));
    KEEL_ASSERT_OK(a.memset(x, 0x44));
    KEEL_ASSERT_OK(b.order_after(a));
    KEEL_ASSERT_OK(b.order_after(b));  // a stream is in order with itself: nothing to do
    KEEL_ASSERT_OK_AND_ASSIGN(auto future, b.copy_to_vector<std::uint8_t>(x));
    KEEL_ASSERT_OK(x.record_stream(b));
    KEEL_ASSERT_OK_AND_ASSIGN(bool ready, future.ready());
    EXPECT_FALSE(ready);
    gate.open();
    KEEL_ASSERT_OK_AND_ASSIGN(Bytes got, std::move(future).get());
    EXPECT_EQ(got, Bytes(4096, 0x44));
}

TEST_P(Conformance, AnEmptyFenceOrdersNothing) {
    KEEL_RULE(0, "stream.wait-event");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    Fence none;
    EXPECT_TRUE(none.empty());
    KEEL_EXPECT_OK(s.wait(none));
    KEEL_ASSERT_OK_AND_ASSIGN(Fence f, s.fence());
    EXPECT_FALSE(f.empty());
    Fence moved = std::move(f);
    EXPECT_TRUE(f.empty());  // NOLINT: inspecting the moved-from state
    KEEL_EXPECT_OK(s.wait(moved));
    KEEL_EXPECT_OK(s.synchronize());
}

}  // namespace
}  // namespace keel::conformance
