// A kernel that faults puts CUDA in a sticky error state; the error must
// reach the caller through the ABI's error path with CUDA's name and
// message. Its own binary: the fault ends the CUDA context for the process.
#include "cuda_plugin_fixture.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace keel::cuda_test {
namespace {

using CudaStickyError = CudaDeviceTest;

struct Seen {
    std::mutex mutex;
    std::condition_variable changed;
    bool called = false;
    keel_status status = KEEL_STATUS_OK;
};

void note_status(void* data, keel_status status) {
    auto* seen = static_cast<Seen*>(data);
    {
        std::lock_guard lock(seen->mutex);
        seen->called = true;
        seen->status = status;
    }
    seen->changed.notify_all();
}

TEST_F(CudaStickyError, AnIllegalAddressReachesEveryLaterCallInCudasWords) {
    Stream stream(api(), device());
    Event after_fault(api(), device());
    Seen seen;
    // The spin delays the fault, so the calls below are enqueued before it.
    spin(stream.get(), 200);
    Outcome launched = launch(stream.get(), "test_illegal_address", {});
    ASSERT_EQ(launched.code, KEEL_STATUS_OK) << launched.message;
    KEEL_ASSERT_OK(api().event_record(after_fault.get(), stream.get()));
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(stream.get(), &note_status, &seen));

    Outcome synced = outcome(api().stream_synchronize(stream.get()));
    EXPECT_EQ(synced.code, KEEL_STATUS_DEVICE_ERROR);
    EXPECT_EQ(synced.message,
              "[cuda stream_synchronize] cudaErrorIllegalAddress: an illegal memory access was encountered");

    // Sticky: queries, event waits and later enqueues on the stream fail too.
    int32_t done = 0;
    Outcome queried = outcome(api().stream_query(stream.get(), &done));
    EXPECT_EQ(queried.code, KEEL_STATUS_DEVICE_ERROR) << queried.message;
    Outcome event_waited = outcome(api().event_synchronize(after_fault.get()));
    EXPECT_EQ(event_waited.code, KEEL_STATUS_DEVICE_ERROR) << event_waited.message;
    EXPECT_NE(event_waited.message.find("cudaErrorIllegalAddress"), std::string::npos) << event_waited.message;
    Outcome enqueued = launch(stream.get(), "noop", {});
    EXPECT_EQ(enqueued.code, KEEL_STATUS_DEVICE_ERROR) << enqueued.message;
    EXPECT_EQ(enqueued.message.rfind("[cuda kernel_launch] ", 0), 0u) << enqueued.message;
    EXPECT_NE(enqueued.message.find("cudaErrorIllegalAddress"), std::string::npos) << enqueued.message;

    // The host function enqueued behind the fault still ran, with the error.
    {
        std::unique_lock lock(seen.mutex);
        ASSERT_TRUE(seen.changed.wait_for(lock, std::chrono::seconds(10), [&] { return seen.called; }))
            << "the host function never ran";
        EXPECT_EQ(seen.status, KEEL_STATUS_DEVICE_ERROR);
    }

    // Where CUDA differs from the CPU plugin: the error belongs to the whole
    // CUDA context, not to one stream, so a stream that did nothing wrong
    // (even one created afterwards) fails as well.
    keel_stream other = nullptr;
    Outcome other_created = outcome(api().stream_create(device(), 0, &other));
    if (other_created.code == KEEL_STATUS_OK) {
        Outcome other_synced = outcome(api().stream_synchronize(other));
        EXPECT_EQ(other_synced.code, KEEL_STATUS_DEVICE_ERROR) << other_synced.message;
        (void)outcome(api().stream_destroy(other));
    } else {
        EXPECT_EQ(other_created.code, KEEL_STATUS_DEVICE_ERROR) << other_created.message;
    }

    // The stream can still be destroyed; destroy reports the error.
    Outcome destroyed = stream.destroy();
    EXPECT_EQ(destroyed.code, KEEL_STATUS_DEVICE_ERROR) << destroyed.message;
    // Events release without leaking even in a failed context.
    (void)after_fault.destroy();
}

}  // namespace
}  // namespace keel::cuda_test
