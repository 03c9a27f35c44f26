// Stream order, events, cross-stream waits and host functions on a GPU.
// test_spin keeps a stream busy, so a wait that did not wait, or an event
// that completed early, shows up as stale data or a wrong query result.
#include "cuda_plugin_fixture.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace keel::cuda_test {
namespace {

using CudaSync = CudaDeviceTest;

TEST_F(CudaSync, ANewStreamIsIdle) {
    Stream stream(api(), device());
    int32_t done = 0;
    KEEL_ASSERT_OK(api().stream_query(stream.get(), &done));
    EXPECT_EQ(done, 1);
}

TEST_F(CudaSync, StreamQueryReportsPendingWorkUntilItCompletes) {
    Stream stream(api(), device());
    spin(stream.get(), 300);
    int32_t done = 1;
    KEEL_ASSERT_OK(api().stream_query(stream.get(), &done));
    EXPECT_EQ(done, 0);
    KEEL_ASSERT_OK(api().stream_synchronize(stream.get()));
    KEEL_ASSERT_OK(api().stream_query(stream.get(), &done));
    EXPECT_EQ(done, 1);
}

TEST_F(CudaSync, StreamCreateRejectsUnknownFlags) {
    keel_stream s = nullptr;
    Outcome o = outcome(api().stream_create(device(), 1, &s));
    EXPECT_EQ(o.code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(s, nullptr);
}

TEST_F(CudaSync, DestroyingAStreamWaitsForItsWork) {
    DeviceBuffer buf(api(), device(), 4096 * sizeof(float));
    std::vector<float> host(4096, 0.0f);
    {
        auto stream = std::make_unique<Stream>(api(), device());
        spin(stream->get(), 100);
        ASSERT_EQ(launch(stream->get(), "fill", {buffer_arg(buf.addr(), buf.size()), f32_arg(4.0f)}).code,
                  KEEL_STATUS_OK);
        KEEL_ASSERT_OK(api().memcpy_d2h(stream->get(), host.data(), buf.addr(), buf.size()));
        Outcome destroyed = stream->destroy();
        ASSERT_EQ(destroyed.code, KEEL_STATUS_OK) << destroyed.message;
    }
    for (float v : host) ASSERT_EQ(v, 4.0f);
}

TEST_F(CudaSync, AStreamRunsItsWorkInOrder) {
    Stream stream(api(), device());
    DeviceBuffer buf(api(), device(), 1 << 20);
    for (int i = 1; i <= 20; ++i)
        ASSERT_EQ(launch(stream.get(), "fill", {buffer_arg(buf.addr(), buf.size()), f32_arg(float(i))}).code,
                  KEEL_STATUS_OK);
    for (float v : read_floats(api(), stream.get(), buf)) ASSERT_EQ(v, 20.0f);
}

TEST_F(CudaSync, ANeverRecordedEventIsComplete) {
    Event event(api(), device());
    int32_t done = 0;
    KEEL_ASSERT_OK(api().event_query(event.get(), &done));
    EXPECT_EQ(done, 1);
    KEEL_EXPECT_OK(api().event_synchronize(event.get()));
}

TEST_F(CudaSync, AnEventCompletesWhenItsStreamReachesIt) {
    Stream stream(api(), device());
    Event event(api(), device());
    spin(stream.get(), 300);
    KEEL_ASSERT_OK(api().event_record(event.get(), stream.get()));
    int32_t done = 1;
    KEEL_ASSERT_OK(api().event_query(event.get(), &done));
    EXPECT_EQ(done, 0);
    KEEL_ASSERT_OK(api().event_synchronize(event.get()));
    KEEL_ASSERT_OK(api().event_query(event.get(), &done));
    EXPECT_EQ(done, 1);
}

TEST_F(CudaSync, ReRecordingAnEventReplacesTheCapturedPoint) {
    Stream busy(api(), device());
    Stream idle(api(), device());
    Event event(api(), device());
    spin(busy.get(), 500);
    KEEL_ASSERT_OK(api().event_record(event.get(), busy.get()));
    KEEL_ASSERT_OK(api().event_record(event.get(), idle.get()));
    KEEL_ASSERT_OK(api().event_synchronize(event.get()));  // the idle stream's point
    int32_t busy_done = 1;
    KEEL_ASSERT_OK(api().stream_query(busy.get(), &busy_done));
    EXPECT_EQ(busy_done, 0) << "event_synchronize waited for the replaced record";
}

TEST_F(CudaSync, AWaitingStreamRunsOnlyAfterTheEvent) {
    constexpr std::size_t n = 1 << 20;
    Stream producer(api(), device());
    Stream consumer(api(), device());
    Event ready(api(), device());
    DeviceBuffer buf(api(), device(), n * sizeof(float));
    KEEL_ASSERT_OK(api().memset_d8(producer.get(), buf.addr(), 0, buf.size()));
    KEEL_ASSERT_OK(api().stream_synchronize(producer.get()));

    spin(producer.get(), 200);
    ASSERT_EQ(launch(producer.get(), "fill", {buffer_arg(buf.addr(), buf.size()), f32_arg(7.0f)}).code,
              KEEL_STATUS_OK);
    KEEL_ASSERT_OK(api().event_record(ready.get(), producer.get()));
    KEEL_ASSERT_OK(api().stream_wait_event(consumer.get(), ready.get()));
    // Without the wait, this copy would run at once and read zeros.
    for (float v : read_floats(api(), consumer.get(), buf)) ASSERT_EQ(v, 7.0f);
}

TEST_F(CudaSync, WaitingOnANeverRecordedEventDoesNotBlock) {
    Stream stream(api(), device());
    Event never(api(), device());
    KEEL_ASSERT_OK(api().stream_wait_event(stream.get(), never.get()));
    KEEL_ASSERT_OK(api().stream_synchronize(stream.get()));
}

TEST_F(CudaSync, DestroyingAnEventWithAPendingRecordIsHarmless) {
    constexpr std::size_t n = 4096;
    Stream producer(api(), device());
    Stream consumer(api(), device());
    DeviceBuffer buf(api(), device(), n * sizeof(float));
    KEEL_ASSERT_OK(api().memset_d8(producer.get(), buf.addr(), 0, buf.size()));
    spin(producer.get(), 300);
    ASSERT_EQ(launch(producer.get(), "fill", {buffer_arg(buf.addr(), buf.size()), f32_arg(2.0f)}).code,
              KEEL_STATUS_OK);
    auto pending = std::make_unique<Event>(api(), device());
    KEEL_ASSERT_OK(api().event_record(pending->get(), producer.get()));
    KEEL_ASSERT_OK(api().stream_wait_event(consumer.get(), pending->get()));
    ASSERT_EQ(pending->destroy().code, KEEL_STATUS_OK);
    pending.reset();

    // A new event must not inherit the pending record (events are pooled).
    Event fresh(api(), device());
    int32_t done = 0;
    KEEL_ASSERT_OK(api().event_query(fresh.get(), &done));
    EXPECT_EQ(done, 1);
    // The wait enqueued before the destroy still holds.
    for (float v : read_floats(api(), consumer.get(), buf)) ASSERT_EQ(v, 2.0f);
}

TEST_F(CudaSync, ElapsedTimeMeasuresTheWorkBetweenTwoTimingEvents) {
    Stream stream(api(), device());
    Event start(api(), device(), KEEL_EVENT_TIMING);
    Event end(api(), device(), KEEL_EVENT_TIMING);
    KEEL_ASSERT_OK(api().event_record(start.get(), stream.get()));
    spin(stream.get(), 20);
    KEEL_ASSERT_OK(api().event_record(end.get(), stream.get()));
    KEEL_ASSERT_OK(api().event_synchronize(end.get()));
    float ms = 0;
    KEEL_ASSERT_OK(api().event_elapsed_time(start.get(), end.get(), &ms));
    EXPECT_GE(ms, 15.0f);
    EXPECT_LT(ms, 10000.0f);
}

TEST_F(CudaSync, ElapsedTimeNeedsTimingEventsThatWereRecorded) {
    Stream stream(api(), device());
    Event plain(api(), device());
    Event timed(api(), device(), KEEL_EVENT_TIMING);
    Event never(api(), device(), KEEL_EVENT_TIMING);
    KEEL_ASSERT_OK(api().event_record(plain.get(), stream.get()));
    KEEL_ASSERT_OK(api().event_record(timed.get(), stream.get()));
    KEEL_ASSERT_OK(api().stream_synchronize(stream.get()));
    float ms = -1;
    Outcome untimed = outcome(api().event_elapsed_time(plain.get(), timed.get(), &ms));
    EXPECT_EQ(untimed.code, KEEL_STATUS_FAILED_PRECONDITION) << untimed.message;
    EXPECT_NE(untimed.message.find("KEEL_EVENT_TIMING"), std::string::npos) << untimed.message;
    Outcome unrecorded = outcome(api().event_elapsed_time(timed.get(), never.get(), &ms));
    EXPECT_EQ(unrecorded.code, KEEL_STATUS_FAILED_PRECONDITION) << unrecorded.message;
    EXPECT_EQ(ms, -1);
}

TEST_F(CudaSync, EventCreateRejectsUnknownFlags) {
    keel_event e = nullptr;
    Outcome o = outcome(api().event_create(device(), 0x80, &e));
    EXPECT_EQ(o.code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(e, nullptr);
}

// Collects what host functions saw; waits for them with a deadline.
struct HostCalls {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<int> order;
    std::vector<keel_status> statuses;
    std::vector<float> seen;
    const float* watch = nullptr;

    bool wait_for(std::size_t n) {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, std::chrono::seconds(10), [&] { return order.size() >= n; });
    }
};

struct HostCallArg {
    HostCalls* calls;
    int index;
};

void record_host_call(void* data, keel_status status) {
    auto* arg = static_cast<HostCallArg*>(data);
    {
        std::lock_guard lock(arg->calls->mutex);
        arg->calls->order.push_back(arg->index);
        arg->calls->statuses.push_back(status);
        if (arg->calls->watch != nullptr) arg->calls->seen.push_back(*arg->calls->watch);
    }
    arg->calls->changed.notify_all();
}

TEST_F(CudaSync, AHostFunctionRunsAfterThePrecedingWorkWithOkStatus) {
    Stream stream(api(), device());
    DeviceBuffer buf(api(), device(), sizeof(float));
    PinnedBuffer host(api(), device(), sizeof(float));
    *host.as<float>() = 0.0f;
    HostCalls calls;
    calls.watch = host.as<float>();
    HostCallArg arg{&calls, 0};
    spin(stream.get(), 100);
    ASSERT_EQ(launch(stream.get(), "fill", {buffer_arg(buf.addr(), buf.size()), f32_arg(3.0f)}).code,
              KEEL_STATUS_OK);
    KEEL_ASSERT_OK(api().memcpy_d2h(stream.get(), host.get(), buf.addr(), sizeof(float)));
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(stream.get(), &record_host_call, &arg));
    KEEL_ASSERT_OK(api().stream_synchronize(stream.get()));
    ASSERT_TRUE(calls.wait_for(1));
    std::lock_guard lock(calls.mutex);
    EXPECT_EQ(calls.statuses.at(0), KEEL_STATUS_OK);
    EXPECT_EQ(calls.seen.at(0), 3.0f) << "the host function ran before the copy it follows";
}

TEST_F(CudaSync, HostFunctionsRunInEnqueueOrder) {
    Stream stream(api(), device());
    HostCalls calls;
    std::vector<HostCallArg> args;
    for (int i = 0; i < 50; ++i) args.push_back({&calls, i});
    for (auto& a : args) KEEL_ASSERT_OK(api().stream_enqueue_host_func(stream.get(), &record_host_call, &a));
    KEEL_ASSERT_OK(api().stream_synchronize(stream.get()));
    ASSERT_TRUE(calls.wait_for(args.size()));
    std::lock_guard lock(calls.mutex);
    for (int i = 0; i < 50; ++i) EXPECT_EQ(calls.order[i], i);
}

TEST_F(CudaSync, ANullHostFunctionIsRejected) {
    Stream stream(api(), device());
    Outcome o = outcome(api().stream_enqueue_host_func(stream.get(), nullptr, nullptr));
    EXPECT_EQ(o.code, KEEL_STATUS_INVALID_ARGUMENT);
}

TEST_F(CudaSync, HandlesOfAnotherDeviceAreRejected) {
    uint32_t n = 0;
    KEEL_ASSERT_OK(api().device_count(&n));
    if (n < 2) GTEST_SKIP() << "needs two CUDA devices";
    keel_device other = nullptr;
    KEEL_ASSERT_OK(api().device_get(1, &other));
    Stream stream(api(), device());
    Event foreign(api(), other);
    Outcome record = outcome(api().event_record(foreign.get(), stream.get()));
    EXPECT_EQ(record.code, KEEL_STATUS_INVALID_ARGUMENT) << record.message;
    Outcome wait = outcome(api().stream_wait_event(stream.get(), foreign.get()));
    EXPECT_EQ(wait.code, KEEL_STATUS_INVALID_ARGUMENT) << wait.message;
}

}  // namespace
}  // namespace keel::cuda_test
