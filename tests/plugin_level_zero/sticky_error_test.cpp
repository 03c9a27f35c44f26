// The sticky-error contract of keel.h on Level Zero, with driver faults
// injected where the stream's work runs: after a failure every wait, query
// and event after the failing point reports it (never success over data
// that was not produced), a failed enqueue leaves the work accepted before
// it intact, waits on a failed stream end in bounded time, and none returns
// while earlier work still touches memory (the fake driver aborts on memory
// freed under a pending command and on events reset while one waits).
#include "fake_fixture.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace keel::level_zero_test {
namespace {

using namespace std::chrono_literals;

// Aborts the process, naming `what`, if not dismissed within `limit`: a
// hang must fail the test, not stall the suite until ctest's timeout.
class Watchdog {
public:
    Watchdog(const char* what, std::chrono::seconds limit)
        : thread_([this, what, limit] {
              std::unique_lock lock(mutex_);
              if (!done_cv_.wait_for(lock, limit, [this] { return done_; })) {
                  std::fprintf(stderr, "watchdog: %s did not return within %llds\n", what,
                               static_cast<long long>(limit.count()));
                  std::abort();
              }
          }) {}
    ~Watchdog() {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        done_cv_.notify_all();
        thread_.join();
    }
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

private:
    std::mutex mutex_;
    std::condition_variable done_cv_;
    bool done_ = false;
    std::thread thread_;
};

// Polls event_query (which never calls zeEventHostSynchronize, so an
// injected wait failure stays for the stream's own worker) until the event
// completed or reports an error; returns that outcome.
CError poll_event(const keel_plugin_api& api, keel_event event) {
    for (int i = 0; i < 20000; ++i) {
        int32_t done = 0;
        CError o = outcome(api.event_query(event, &done));
        if (o.code != KEEL_STATUS_OK || done != 0) return o;
        std::this_thread::sleep_for(1ms);
    }
    return CError{KEEL_STATUS_INTERNAL, "the event never completed (20 s)"};
}

constexpr std::size_t kBytes = 4096;

// Holds `s` on the device (a barrier on another stream's event, no host
// function of its own) until the gate opens.
struct DeviceHold {
    DeviceHold(const keel_plugin_api& api, keel_device device, keel_stream s) : api_(api) {
        KEEL_EXPECT_OK(api.stream_create(device, 0, &other_));
        KEEL_EXPECT_OK(api.event_create(device, 0, &event_));
        KEEL_EXPECT_OK(gate.hold(api, other_));
        KEEL_EXPECT_OK(api.event_record(event_, other_));
        KEEL_EXPECT_OK(api.stream_wait_event(s, event_));
    }
    ~DeviceHold() {
        gate.open();
        KEEL_EXPECT_OK(api_.stream_destroy(other_));
        KEEL_EXPECT_OK(api_.event_destroy(event_));
    }
    DeviceHold(const DeviceHold&) = delete;
    DeviceHold& operator=(const DeviceHold&) = delete;

    const keel_plugin_api& api_;
    keel_stream other_ = nullptr;
    keel_event event_ = nullptr;
    Gate gate;
};

// A pageable read-back of `buf` (filled with 0x5a) whose host copy-out step
// is held behind a gate; `inject` runs while it is held.
template <class Inject>
void read_back_with_fault(const keel_plugin_api& api, keel_stream s, keel_device_addr buf,
                          std::vector<std::uint8_t>& out, keel_event after, Inject inject) {
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(api, s));
    KEEL_ASSERT_OK(api.memset_d8(s, buf, 0x5a, kBytes));
    KEEL_ASSERT_OK(api.memcpy_d2h(s, out.data(), buf, kBytes));  // pageable: staged
    KEEL_ASSERT_OK(api.event_record(after, s));
    inject();
    gate.open();
}

TEST_F(OnFakeDriver, AFailedHostWaitBeforeACopyOutIsReportedByTheEventNeverAsZeros) {
    for (const ze_result_t fault : {ZE_RESULT_ERROR_DEVICE_LOST, ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY}) {
        SCOPED_TRACE(fault);
        Watchdog watchdog("a read-back after a failed host wait", 30s);
        const keel_stream s = new_stream();
        const keel_device_addr buf = new_buffer(kBytes);
        keel_event after = nullptr;
        KEEL_ASSERT_OK(api().event_create(device(), 0, &after));
        std::vector<std::uint8_t> out(kBytes, 0);
        // The worker's first host wait is the copy-out step's (the gate's
        // host function waits for nothing).
        read_back_with_fault(api(), s, buf, out, after,
                             [&] { fake_ze_fail_calls("zeEventHostSynchronize", fault, 0, 1); });
        const CError o = poll_event(api(), after);
        ASSERT_NE(o.code, KEEL_STATUS_INTERNAL);
        if (o.code == KEEL_STATUS_OK) {
            EXPECT_EQ(out, std::vector<std::uint8_t>(kBytes, 0x5a)) << "the event reported success over data not copied";
            KEEL_EXPECT_OK(api().event_synchronize(after));
        } else {
            EXPECT_TRUE(contains(o.message, "zeEventHostSynchronize")) << o.message;
            const CError sync = outcome(api().event_synchronize(after));
            EXPECT_EQ(sync.code, o.code) << "event_synchronize reports what event_query did: " << sync.message;
        }
        EXPECT_EQ(fault == ZE_RESULT_ERROR_DEVICE_LOST, o.code != KEEL_STATUS_OK)
            << "a device-fatal wait fails the stream; a transient one is retried: " << o.message;
        KEEL_EXPECT_OK(api().event_destroy(after));
        (void)take(api().stream_destroy(s));
        KEEL_EXPECT_OK(api().device_free(device(), buf));
        fake_ze_reset();
    }
}

TEST_F(OnFakeDriver, AFailedLaterEnqueueLeavesAnEarlierReadBackIntact) {
    Watchdog watchdog("a read-back before a failed enqueue", 30s);
    const keel_stream s = new_stream();
    const keel_device_addr buf = new_buffer(kBytes);
    keel_event after = nullptr;
    KEEL_ASSERT_OK(api().event_create(device(), 0, &after));
    std::vector<std::uint8_t> out(kBytes, 0);
    read_back_with_fault(api(), s, buf, out, after, [&] {
        fake_ze_fail_calls("zeCommandListAppendMemoryFill", ZE_RESULT_ERROR_DEVICE_LOST, 0, 1);
        const CError later = outcome(api().memset_d8(s, buf, 0, kBytes));
        EXPECT_EQ(later.code, KEEL_STATUS_DEVICE_ERROR) << later.message;
    });
    const CError o = poll_event(api(), after);
    EXPECT_EQ(o.code, KEEL_STATUS_OK) << "work accepted before the failed enqueue is not its victim: " << o.message;
    EXPECT_EQ(out, std::vector<std::uint8_t>(kBytes, 0x5a));
    KEEL_EXPECT_OK(api().event_synchronize(after));
    const CError sync = outcome(api().stream_synchronize(s));
    EXPECT_EQ(sync.code, KEEL_STATUS_DEVICE_ERROR) << "the stream is failed from the enqueue on";
    KEEL_EXPECT_OK(api().event_destroy(after));
    KEEL_EXPECT_ERROR(api().stream_destroy(s), KEEL_STATUS_DEVICE_ERROR);
    KEEL_EXPECT_OK(api().device_free(device(), buf));
}

TEST_F(OnFakeDriver, AFailedHostSignalFailsTheStreamWithoutAHang) {
    Watchdog watchdog("waits after a failed zeEventHostSignal", 30s);
    const keel_stream s = new_stream();
    const keel_device_addr buf = new_buffer(kBytes);
    keel_event after = nullptr;
    KEEL_ASSERT_OK(api().event_create(device(), 0, &after));
    StatusLog ran;
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(api(), s));
    fake_ze_fail_calls("zeEventHostSignal", ZE_RESULT_ERROR_DEVICE_LOST, 0, 1);  // the gate's own slot
    KEEL_ASSERT_OK(api().memset_d8(s, buf, 1, kBytes));
    KEEL_ASSERT_OK(api().event_record(after, s));
    gate.open();
    const CError sync = outcome(api().stream_synchronize(s));
    EXPECT_EQ(sync.code, KEEL_STATUS_DEVICE_ERROR) << sync.message;
    EXPECT_TRUE(contains(sync.message, "zeEventHostSignal")) << sync.message;
    const CError event = outcome(api().event_synchronize(after));
    EXPECT_EQ(event.code, KEEL_STATUS_DEVICE_ERROR) << event.message;
    KEEL_EXPECT_ERROR(api().stream_destroy(s), KEEL_STATUS_DEVICE_ERROR);
    KEEL_EXPECT_OK(api().event_destroy(after));
    KEEL_EXPECT_OK(api().device_free(device(), buf));
    plugin().shutdown();
    EXPECT_EQ(fake_ze_live_objects(), 0u);
}

TEST_F(OnFakeDriver, DestroyingAStreamWhoseWaitFailedResetsNoEventAQueuedCommandWaitsFor) {
    Watchdog watchdog("stream_destroy after a failed wait", 30s);
    const keel_stream s = new_stream();
    const keel_device_addr buf = new_buffer(kBytes);
    DeviceHold hold(api(), device(), s);
    KEEL_ASSERT_OK(api().memset_d8(s, buf, 1, kBytes));
    KEEL_ASSERT_OK(api().memset_d8(s, buf, 2, kBytes));
    fake_ze_fail_calls("zeEventHostSynchronize", ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, 0, 1);
    std::thread opener([&] {
        std::this_thread::sleep_for(50ms);
        hold.gate.open();
    });
    (void)take(api().stream_destroy(s));  // the fake driver aborts on a reset under a waiting command
    opener.join();
    KEEL_EXPECT_OK(api().device_free(device(), buf));
}

TEST_F(OnFakeDriver, OneFailedStatusQueryDoesNotFailTheStream) {
    const keel_stream s = new_stream();
    const keel_device_addr buf = new_buffer(kBytes);
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(api(), s));
    KEEL_ASSERT_OK(api().memset_d8(s, buf, 1, kBytes));
    fake_ze_fail_calls("zeEventQueryStatus", ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, 0, 1);
    int32_t done = 0;
    (void)take(api().stream_query(s, &done));  // may report the failed query itself
    gate.open();
    KEEL_EXPECT_OK(api().stream_synchronize(s));
    KEEL_EXPECT_OK(api().memset_d8(s, buf, 2, kBytes));
    KEEL_EXPECT_OK(api().stream_synchronize(s));
    KEEL_EXPECT_OK(api().stream_destroy(s));
    KEEL_EXPECT_OK(api().device_free(device(), buf));
}

TEST_F(OnFakeDriver, SynchronizingAFailedStreamWaitsForTheWorkBeforeIt) {
    Watchdog watchdog("stream_synchronize on a failed stream", 30s);
    const keel_stream s = new_stream();
    const keel_device_addr buf = new_buffer(kBytes);
    DeviceHold hold(api(), device(), s);
    KEEL_ASSERT_OK(api().memset_d8(s, buf, 1, kBytes));
    fake_ze_fail_calls("zeCommandListAppendMemoryFill", ZE_RESULT_ERROR_DEVICE_LOST, 0, 1);
    KEEL_EXPECT_ERROR(api().memset_d8(s, buf, 2, kBytes), KEEL_STATUS_DEVICE_ERROR);
    const std::uint64_t before = fake_ze_commands_completed();
    std::thread opener([&] {
        std::this_thread::sleep_for(50ms);
        hold.gate.open();
    });
    KEEL_EXPECT_ERROR(api().stream_synchronize(s), KEEL_STATUS_DEVICE_ERROR);
    EXPECT_GT(fake_ze_commands_completed(), before) << "returned before the memset enqueued before it ran";
    // Freed on the strength of that return: the fake driver aborts if the
    // memset still writes it.
    KEEL_EXPECT_OK(api().device_free(device(), buf));
    opener.join();
    KEEL_EXPECT_ERROR(api().stream_destroy(s), KEEL_STATUS_DEVICE_ERROR);
}

}  // namespace
}  // namespace keel::level_zero_test
