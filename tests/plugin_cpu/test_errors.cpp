// Error paths: null handles and arguments, and sticky asynchronous errors.
#include "cpu_test.hpp"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace keel::cpu::testing {
namespace {

class CpuErrors : public CpuPluginTest {
protected:
    // Makes `s` fail asynchronously (a copy past the end of an allocation).
    // Enqueues a copy that fails when it runs. Once it ran the stream refuses enqueues, so a test that
    // enqueues behind it holds the stream with block() first.
    void break_stream(keel_stream s) {
        keel_device_addr a = alloc(16);
        static uint8_t buf[64];
        KEEL_ASSERT_OK(api().memcpy_h2d(s, a, buf, 64));
    }
};

TEST_F(CpuErrors, NullHandlesAndOutputsAreInvalidArguments) {
    keel_stream s = stream();
    keel_event e = event();
    int32_t done = 0;
    auto expect_invalid = [](std::optional<CError> err, const char* what) {
        ASSERT_TRUE(err) << what;
        EXPECT_EQ(err->code, KEEL_STATUS_INVALID_ARGUMENT) << what;
        EXPECT_EQ(err->message.rfind("[cpu ", 0), 0u) << err->message;
    };
    expect_invalid(take(api().stream_synchronize(nullptr)), "stream_synchronize");
    expect_invalid(take(api().stream_query(nullptr, &done)), "stream_query");
    expect_invalid(take(api().stream_query(s, nullptr)), "stream_query out");
    expect_invalid(take(api().stream_destroy(nullptr)), "stream_destroy");
    expect_invalid(take(api().stream_wait_event(s, nullptr)), "stream_wait_event");
    expect_invalid(take(api().stream_wait_event(nullptr, e)), "stream_wait_event stream");
    expect_invalid(take(api().stream_enqueue_host_func(s, nullptr, nullptr)), "host func");
    expect_invalid(take(api().event_record(nullptr, s)), "event_record");
    expect_invalid(take(api().event_record(e, nullptr)), "event_record stream");
    expect_invalid(take(api().event_query(nullptr, &done)), "event_query");
    expect_invalid(take(api().event_synchronize(nullptr)), "event_synchronize");
    expect_invalid(take(api().event_destroy(nullptr)), "event_destroy");
    expect_invalid(take(api().stream_create(nullptr, 0, nullptr)), "stream_create");
    keel_stream out = nullptr;
    expect_invalid(take(api().stream_create(dev(), 1, &out)), "stream_create flags");
    expect_invalid(take(api().memcpy_h2d(nullptr, 1, &done, 4)), "memcpy_h2d stream");
    keel_device_addr a = alloc(16);
    expect_invalid(take(api().memcpy_h2d(s, a, nullptr, 4)), "memcpy_h2d src");
    expect_invalid(take(api().memcpy_d2h(s, nullptr, a, 4)), "memcpy_d2h dst");
    expect_invalid(take(api().memcpy_h2d(s, 0, &done, 4)), "memcpy_h2d address 0");
    expect_invalid(take(api().device_alloc(nullptr, 16, &a)), "device_alloc device");
    expect_invalid(take(api().device_alloc(dev(), 0, &a)), "device_alloc size 0");
    expect_invalid(take(api().kernel_get(dev(), nullptr, nullptr)), "kernel_get");
    int garbage[64] = {};
    expect_invalid(take(api().stream_synchronize(reinterpret_cast<keel_stream>(garbage))), "foreign stream");
}

TEST_F(CpuErrors, AFailedOperationMakesTheStreamStickyFailed) {
    keel_stream s = stream();
    break_stream(s);
    auto e = take(api().stream_synchronize(s));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_OUT_OF_RANGE);
    EXPECT_EQ(e->message.rfind("[cpu stream_synchronize]", 0), 0u) << e->message;
    // Sticky: every later synchronize, query and enqueue reports it.
    e = take(api().stream_synchronize(s));
    ASSERT_TRUE(e);
    int32_t done = 0;
    e = take(api().stream_query(s, &done));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_OUT_OF_RANGE);
    e = take(api().memset_d8(s, alloc(4), 0, 4));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_OUT_OF_RANGE);
    EXPECT_NE(e->message.find("error state"), std::string::npos) << e->message;
    // Destroy releases it and reports the error once more.
    forget_stream(s);
    e = take(api().stream_destroy(s));
    ASSERT_TRUE(e);
}

TEST_F(CpuErrors, OperationsAfterAFailureAreSkippedButHostFunctionsStillRunWithTheError) {
    keel_stream s = stream();
    auto gate = block(s);
    keel_device_addr a = alloc(4);
    uint32_t v = 5, back = 9;
    break_stream(s);
    KEEL_ASSERT_OK(api().memcpy_h2d(s, a, &v, 4));  // still accepted: the failure has not happened yet
    KEEL_ASSERT_OK(api().memcpy_d2h(s, &back, a, 4));
    Recorder r;
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(s, &Recorder::fn, r.slot(1)));
    gate->open();
    EXPECT_TRUE(take(api().stream_synchronize(s)));
    EXPECT_EQ(back, 9u) << "an op after the failure ran";
    ASSERT_EQ(r.statuses().size(), 1u);
    EXPECT_EQ(r.statuses()[0], KEEL_STATUS_OUT_OF_RANGE);
}

TEST_F(CpuErrors, EventsRecordedAfterTheFailureReportItAndEarlierOnesDoNot) {
    keel_stream s = stream();
    keel_event before = event();
    keel_event after = event();
    auto gate = block(s);
    KEEL_ASSERT_OK(api().event_record(before, s));
    break_stream(s);
    KEEL_ASSERT_OK(api().event_record(after, s));
    gate->open();
    auto e = take(api().event_synchronize(after));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_OUT_OF_RANGE);
    int32_t done = 0;
    EXPECT_TRUE(take(api().event_query(after, &done)));
    KEEL_EXPECT_OK(api().event_synchronize(before));
    KEEL_EXPECT_OK(api().event_query(before, &done));
    EXPECT_EQ(done, 1);
}

TEST_F(CpuErrors, AFailedStreamDoesNotFailOtherStreams) {
    keel_stream bad = stream();
    keel_stream good = stream();
    keel_event e = event();
    break_stream(bad);
    EXPECT_TRUE(take(api().stream_synchronize(bad)));
    keel_device_addr a = alloc(4);
    KEEL_ASSERT_OK(api().memset_d8(good, a, 3, 4));
    KEEL_ASSERT_OK(api().event_record(e, good));
    KEEL_ASSERT_OK(api().stream_synchronize(good));
}

TEST_F(CpuErrors, AStreamWaitingOnAnEventRecordedAfterAFailureFailsWithTheOriginalError) {
    for (const bool failed_before_the_wait : {false, true}) {
        SCOPED_TRACE(failed_before_the_wait ? "failed before the wait" : "failed while the waiter waits");
        keel_stream producer = stream();
        keel_stream consumer = stream();
        keel_event e = event();
        keel_device_addr out = alloc(64);
        auto gate = block(producer);
        break_stream(producer);
        KEEL_ASSERT_OK(api().event_record(e, producer));
        if (failed_before_the_wait) {
            gate->open();
            EXPECT_TRUE(take(api().stream_synchronize(producer)));
        }
        KEEL_ASSERT_OK(api().stream_wait_event(consumer, e));
        (void)take(api().memset_d8(consumer, out, 1, 64));  // over data the producer never wrote (may be refused)
        gate->open();
        auto failed = take(api().stream_synchronize(consumer));
        ASSERT_TRUE(failed) << "the consumer went on after its producer failed";
        EXPECT_EQ(failed->code, KEEL_STATUS_OUT_OF_RANGE) << "the original error's status";
        EXPECT_NE(failed->message.find("waited for an event recorded after a failure"), std::string::npos)
            << failed->message;
        EXPECT_NE(failed->message.find("runs past the end"), std::string::npos) << "the original message: " << failed->message;
    }
}

TEST_F(CpuErrors, AFailedStreamStillOrdersItsWaits) {
    keel_stream producer = stream();
    keel_stream failed = stream();
    keel_event e = event();
    struct Seen {
        std::atomic<bool> opened{false};
        std::atomic<int> ran_after_open{-1};
    } seen;
    auto gate = block(producer);
    KEEL_ASSERT_OK(api().event_record(e, producer));
    auto failed_gate = block(failed);  // enqueue the wait before the failure runs: a failed stream refuses enqueues
    break_stream(failed);
    KEEL_ASSERT_OK(api().stream_wait_event(failed, e));
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(
        failed, [](void* p, keel_status) {
            auto* s = static_cast<Seen*>(p);
            s->ran_after_open.store(s->opened.load() ? 1 : 0);
        },
        &seen));
    failed_gate->open();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    seen.opened.store(true);
    gate->open();
    EXPECT_TRUE(take(api().stream_synchronize(failed)));
    EXPECT_EQ(seen.ran_after_open.load(), 1) << "the host function ran before the point its stream waited for";
}

}  // namespace
}  // namespace keel::cpu::testing
