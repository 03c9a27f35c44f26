// Streams, events and host callbacks: order, asynchrony, cross-stream waits.
// Many tests block a worker on a Gate: with an implementation that ran work
// inline at enqueue, they would deadlock or see the wrong order.
#include "cpu_test.hpp"

#include <chrono>

namespace keel::cpu::testing {
namespace {

using namespace std::chrono_literals;

class CpuStreams : public CpuPluginTest {};

TEST_F(CpuStreams, RunOperationsInEnqueueOrder) {
    keel_stream s = stream();
    Recorder r;
    for (int i = 0; i < 100; ++i) KEEL_ASSERT_OK(api().stream_enqueue_host_func(s, &Recorder::fn, r.slot(i)));
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    std::vector<int> expected(100);
    for (int i = 0; i < 100; ++i) expected[i] = i;
    EXPECT_EQ(r.seen(), expected);
}

TEST_F(CpuStreams, EnqueueReturnsBeforeTheWorkRuns) {
    keel_stream s = stream();
    auto gate = block(s);
    Recorder r;
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(s, &Recorder::fn, r.slot(1)));
    int32_t done = 1;
    KEEL_ASSERT_OK(api().stream_query(s, &done));
    EXPECT_EQ(done, 0);
    EXPECT_TRUE(r.seen().empty());
    gate->open();
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    KEEL_ASSERT_OK(api().stream_query(s, &done));
    EXPECT_EQ(done, 1);
    EXPECT_EQ(r.seen(), std::vector<int>{1});
}

TEST_F(CpuStreams, RunHostFunctionsOnAWorkerThreadNotTheCaller) {
    keel_stream s = stream();
    Recorder r;
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(s, &Recorder::fn, r.slot(0)));
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    ASSERT_EQ(r.threads().size(), 1u);
    EXPECT_NE(r.threads()[0], std::this_thread::get_id());
    EXPECT_EQ(r.statuses()[0], KEEL_STATUS_OK);
}

TEST_F(CpuStreams, KeepPerThreadOrderWhenSeveralHostThreadsEnqueue) {
    keel_stream s = stream();
    auto gate = block(s);  // everything queues up behind the gate
    Recorder r;
    constexpr int kThreads = 4, kEach = 200;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < kEach; ++i)
                take(api().stream_enqueue_host_func(s, &Recorder::fn, r.slot(t * 1000 + i)));
        });
    for (auto& t : threads) t.join();
    gate->open();
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    const auto seen = r.seen();
    ASSERT_EQ(seen.size(), size_t{kThreads * kEach});
    std::vector<int> next(kThreads, 0);
    for (int v : seen) {
        EXPECT_EQ(v % 1000, next[v / 1000]) << "thread " << v / 1000 << " out of order";
        next[v / 1000] = v % 1000 + 1;
    }
}

TEST_F(CpuStreams, StreamsRunConcurrently) {
    keel_stream a = stream();
    keel_stream b = stream();
    auto gate = block(a);
    Recorder r;
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(b, &Recorder::fn, r.slot(7)));
    KEEL_ASSERT_OK(api().stream_synchronize(b));  // would hang if b shared a's worker
    EXPECT_EQ(r.seen(), std::vector<int>{7});
    gate->open();
}

TEST_F(CpuStreams, WaitEventOrdersTheWaitingStreamBehindTheRecord) {
    keel_stream a = stream();
    keel_stream b = stream();
    keel_event e = event();
    auto gate = block(a);
    Recorder r;
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(a, &Recorder::fn, r.slot(1)));
    KEEL_ASSERT_OK(api().event_record(e, a));
    KEEL_ASSERT_OK(api().stream_wait_event(b, e));  // the host does not block here
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(b, &Recorder::fn, r.slot(2)));
    std::this_thread::sleep_for(20ms);
    EXPECT_TRUE(r.seen().empty()) << "b ran before the event it waits for";
    int32_t done = 1;
    KEEL_ASSERT_OK(api().event_query(e, &done));
    EXPECT_EQ(done, 0);
    KEEL_ASSERT_OK(api().stream_query(b, &done));
    EXPECT_EQ(done, 0);
    gate->open();
    KEEL_ASSERT_OK(api().stream_synchronize(b));
    EXPECT_EQ(r.seen(), (std::vector<int>{1, 2}));
    KEEL_ASSERT_OK(api().event_query(e, &done));
    EXPECT_EQ(done, 1);
}

TEST_F(CpuStreams, WaitBlocksOnlyTheWaitingStream) {
    keel_stream a = stream();
    keel_stream b = stream();
    keel_stream c = stream();
    keel_event e = event();
    auto gate = block(a);
    KEEL_ASSERT_OK(api().event_record(e, a));
    KEEL_ASSERT_OK(api().stream_wait_event(b, e));
    Recorder r;
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(c, &Recorder::fn, r.slot(3)));
    KEEL_ASSERT_OK(api().stream_synchronize(c));
    EXPECT_EQ(r.seen(), std::vector<int>{3});
    gate->open();
    KEEL_ASSERT_OK(api().stream_synchronize(b));
}

TEST_F(CpuStreams, AnEventNeverRecordedIsComplete) {
    keel_stream s = stream();
    keel_event e = event();
    int32_t done = 0;
    KEEL_ASSERT_OK(api().event_query(e, &done));
    EXPECT_EQ(done, 1);
    KEEL_ASSERT_OK(api().event_synchronize(e));
    KEEL_ASSERT_OK(api().stream_wait_event(s, e));
    KEEL_ASSERT_OK(api().stream_synchronize(s));
}

TEST_F(CpuStreams, EventSynchronizeBlocksTheHostUntilTheRecordedPoint) {
    keel_stream s = stream();
    keel_event e = event();
    std::atomic<bool> opened{false};
    auto gate = block(s);
    KEEL_ASSERT_OK(api().event_record(e, s));
    std::thread opener([&] {
        std::this_thread::sleep_for(20ms);
        opened = true;
        gate->open();
    });
    KEEL_ASSERT_OK(api().event_synchronize(e));
    EXPECT_TRUE(opened.load());
    opener.join();
}

TEST_F(CpuStreams, ReRecordingDoesNotChangeAWaitAlreadyEnqueued) {
    keel_stream a = stream();
    keel_stream b = stream();
    keel_stream c = stream();
    keel_event e = event();
    auto gate_a = block(a);
    KEEL_ASSERT_OK(api().event_record(e, a));
    KEEL_ASSERT_OK(api().stream_wait_event(b, e));  // captures a's point
    KEEL_ASSERT_OK(api().event_record(e, c));       // c is idle: the new point is complete
    int32_t done = 0;
    KEEL_ASSERT_OK(api().event_synchronize(e));
    KEEL_ASSERT_OK(api().event_query(e, &done));
    EXPECT_EQ(done, 1);
    KEEL_ASSERT_OK(api().stream_query(b, &done));
    EXPECT_EQ(done, 0) << "b's wait must still follow a's record";
    gate_a->open();
    KEEL_ASSERT_OK(api().stream_synchronize(b));
}

TEST_F(CpuStreams, DestroyingAnEventKeepsEnqueuedWaitsValid) {
    keel_stream a = stream();
    keel_stream b = stream();
    keel_event e = nullptr;
    KEEL_ASSERT_OK(api().event_create(dev(), 0, &e));
    auto gate = block(a);
    KEEL_ASSERT_OK(api().event_record(e, a));
    KEEL_ASSERT_OK(api().stream_wait_event(b, e));
    KEEL_ASSERT_OK(api().event_destroy(e));
    Recorder r;
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(b, &Recorder::fn, r.slot(1)));
    gate->open();
    KEEL_ASSERT_OK(api().stream_synchronize(b));
    EXPECT_EQ(r.seen(), std::vector<int>{1});
}

TEST_F(CpuStreams, DestroyingAStreamRunsItsQueuedWorkFirst) {
    keel_stream s = stream();
    forget_stream(s);
    Recorder r;
    for (int i = 0; i < 10; ++i) KEEL_ASSERT_OK(api().stream_enqueue_host_func(s, &Recorder::fn, r.slot(i)));
    KEEL_ASSERT_OK(api().stream_destroy(s));
    EXPECT_EQ(r.seen().size(), 10u);
}

TEST_F(CpuStreams, TimingEventsMeasureTheTimeBetweenTwoRecords) {
    keel_stream s = stream();
    keel_event start = event(KEEL_EVENT_TIMING);
    keel_event end = event(KEEL_EVENT_TIMING);
    KEEL_ASSERT_OK(api().event_record(start, s));
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(
        s, [](void*, keel_status) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }, nullptr));
    KEEL_ASSERT_OK(api().event_record(end, s));
    float ms = 0;
    KEEL_ASSERT_OK(api().event_synchronize(end));
    KEEL_ASSERT_OK(api().event_elapsed_time(start, end, &ms));
    EXPECT_GE(ms, 19.0f);
    EXPECT_LT(ms, 5000.0f);
}

// A timing event recorded again (its earlier timestamp's storage reused
// once its op ran) is not complete until the new record runs, then tells
// the new time, never the old one.
TEST_F(CpuStreams, ATimingEventRecordedAgainTellsItsNewTimeOnlyOnceReached) {
    keel_stream s = stream();
    keel_event first = event(KEEL_EVENT_TIMING);
    keel_event again = event(KEEL_EVENT_TIMING);
    KEEL_ASSERT_OK(api().event_record(first, s));
    KEEL_ASSERT_OK(api().event_record(again, s));
    KEEL_ASSERT_OK(api().event_synchronize(again));
    float ms = -1;
    KEEL_ASSERT_OK(api().event_elapsed_time(first, again, &ms));
    EXPECT_GE(ms, 0.0f);
    Gate* gate = block(s);
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(
        s, [](void*, keel_status) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }, nullptr));
    KEEL_ASSERT_OK(api().event_record(again, s));
    auto pending = take(api().event_elapsed_time(first, again, &ms));
    ASSERT_TRUE(pending) << "the new record has not run";
    EXPECT_EQ(pending->code, KEEL_STATUS_FAILED_PRECONDITION);
    gate->open();
    KEEL_ASSERT_OK(api().event_synchronize(again));
    KEEL_ASSERT_OK(api().event_elapsed_time(first, again, &ms));
    EXPECT_GE(ms, 19.0f) << "the time of the new record";
    for (int i = 0; i < 3; ++i) KEEL_ASSERT_OK(api().event_record(first, s));
    KEEL_ASSERT_OK(api().event_synchronize(first));
    KEEL_ASSERT_OK(api().event_elapsed_time(again, first, &ms));
    EXPECT_GE(ms, 0.0f);
    EXPECT_LT(ms, 5000.0f);
}

TEST_F(CpuStreams, ElapsedTimeRefusesEventsWithoutTiming) {
    keel_stream s = stream();
    keel_event a = event();
    keel_event b = event();
    KEEL_ASSERT_OK(api().event_record(a, s));
    KEEL_ASSERT_OK(api().event_record(b, s));
    float ms = 0;
    auto e = take(api().event_elapsed_time(a, b, &ms));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_FAILED_PRECONDITION);
    keel_event t = event(KEEL_EVENT_TIMING);
    e = take(api().event_elapsed_time(t, t, &ms));
    ASSERT_TRUE(e) << "never recorded";
    EXPECT_EQ(e->code, KEEL_STATUS_FAILED_PRECONDITION);
}

TEST_F(CpuStreams, AnEnqueueBeyondTheQueueDepthWaitsForTheWorker) {
    // The queue holds 65536 ops (like a hardware queue); the next enqueue
    // waits until the worker drained half of them, bounding memory.
    constexpr uint64_t kDepth = 1u << 16;
    keel_stream s = stream();
    Gate* gate = block(s);  // position 1
    std::atomic<uint64_t> calls{0}, ran{0};
    auto count = [](void* n, keel_status) { static_cast<std::atomic<uint64_t>*>(n)->fetch_add(1); };
    std::thread producer([&] {
        for (uint64_t i = 0; i < kDepth + 100; ++i) {
            take(api().stream_enqueue_host_func(s, count, &ran));
            calls.fetch_add(1);
        }
    });
    uint64_t seen = 0;
    for (int i = 0; i < 2000 && (seen = calls.load()) < kDepth - 1; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(calls.load(), kDepth - 1) << "the enqueue past the depth did not wait";
    EXPECT_EQ(ran.load(), 0u);
    gate->open();
    producer.join();
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    EXPECT_EQ(ran.load(), kDepth + 100);
}

// Parked regime: with no spin window every wait goes through the futex path.
class CpuStreamsParked : public CpuPluginTest {
    ScopedEnv::Vars environment() const override { return {{"KEEL_CPU_SPIN_US", "0"}}; }
};

TEST_F(CpuStreamsParked, WakeParkedWorkersAndWaitersWithoutSpinning) {
    keel_stream a = stream();
    keel_stream b = stream();
    keel_event e = event();
    Recorder r;
    for (int i = 0; i < 200; ++i) {
        KEEL_ASSERT_OK(api().stream_enqueue_host_func(a, &Recorder::fn, r.slot(2 * i)));
        KEEL_ASSERT_OK(api().event_record(e, a));
        KEEL_ASSERT_OK(api().stream_wait_event(b, e));
        KEEL_ASSERT_OK(api().stream_enqueue_host_func(b, &Recorder::fn, r.slot(2 * i + 1)));
        if (i % 3 == 0) {
            KEEL_ASSERT_OK(api().stream_synchronize(b));
        }
        if (i % 3 == 1) {
            KEEL_ASSERT_OK(api().event_synchronize(e));
        }
    }
    KEEL_ASSERT_OK(api().stream_synchronize(b));
    KEEL_ASSERT_OK(api().stream_synchronize(a));
    const auto seen = r.seen();
    ASSERT_EQ(seen.size(), 400u);
    // b's k-th op ran after a's k-th op.
    std::vector<size_t> at(400);
    for (size_t i = 0; i < seen.size(); ++i) at[seen[i]] = i;
    for (int i = 0; i < 200; ++i) EXPECT_LT(at[2 * i], at[2 * i + 1]);
}

}  // namespace
}  // namespace keel::cpu::testing
