// Driver errors injected through the fake driver: every ze_result_t reaches
// the caller as a keel status with Level Zero's name in the message, and a
// lost device makes streams sticky-failed as keel.h describes.
#include "fake_fixture.hpp"

#include <keel/c_error.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace keel::level_zero_test {
namespace {

TEST_F(OnFakeDriver, AnAllocationFailureIsOutOfMemoryInLevelZerosWords) {
    fake_ze_fail_calls("zeMemAllocDevice", ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, 0, 1);
    keel_device_addr addr = 0;
    const CError o = outcome(api().device_alloc(device(), 4096, &addr));
    EXPECT_EQ(o.code, KEEL_STATUS_OUT_OF_MEMORY);
    EXPECT_EQ(o.message,
              "[level_zero device_alloc] zeMemAllocDevice: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY (4096 bytes on level_zero:0)");
    EXPECT_EQ(addr, 0u) << "outputs are written only on success";
    const keel_device_addr next = new_buffer(4096);  // the failure was one call, not a state
    EXPECT_NE(next, 0u);
    KEEL_EXPECT_OK(api().device_free(device(), next));
}

TEST_F(OnFakeDriver, AHostAllocationFailureIsOutOfMemory) {
    fake_ze_fail_calls("zeMemAllocHost", ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, 0, 1);
    void* p = nullptr;
    const CError o = outcome(api().host_alloc(device(), 100, &p));
    EXPECT_EQ(o.code, KEEL_STATUS_OUT_OF_MEMORY);
    EXPECT_EQ(o.message, "[level_zero host_alloc] zeMemAllocHost: ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY (100 pinned bytes)");
}

TEST_F(OnFakeDriver, ExhaustingDeviceMemoryIsOutOfMemoryAndFreeingRecovers) {
    // 2 GiB fake device: two 1 GiB allocations fit, a third does not.
    const keel_device_addr a = new_buffer(1ull << 30);
    const keel_device_addr b = new_buffer(1ull << 30);
    keel_device_addr c = 0;
    const CError o = outcome(api().device_alloc(device(), 1ull << 20, &c));
    EXPECT_EQ(o.code, KEEL_STATUS_OUT_OF_MEMORY) << o.message;
    EXPECT_TRUE(contains(o.message, "zeMemAllocDevice: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY")) << o.message;
    KEEL_EXPECT_OK(api().device_free(device(), a));
    KEEL_EXPECT_OK(api().device_alloc(device(), 1ull << 20, &c));
    KEEL_EXPECT_OK(api().device_free(device(), c));
    KEEL_EXPECT_OK(api().device_free(device(), b));
}

TEST_F(OnFakeDriver, AFailedAppendIsReturnedAndTheStreamGoesOn) {
    const keel_stream s = new_stream();
    const keel_device_addr buf = new_buffer(256);
    std::vector<std::uint8_t> host(256, 0x5a), back(256, 0);
    fake_ze_fail_calls("zeCommandListAppendMemoryCopy", ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, 0, 1);
    const CError o = outcome(api().memcpy_d2d(s, buf, buf + 128, 128));
    EXPECT_EQ(o.code, KEEL_STATUS_OUT_OF_MEMORY);
    EXPECT_EQ(o.message,
              "[level_zero memcpy_d2d] zeCommandListAppendMemoryCopy: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY");
    // Not a sticky error: nothing was enqueued, and the stream works on.
    KEEL_EXPECT_OK(api().memcpy_h2d(s, buf, host.data(), host.size()));
    KEEL_EXPECT_OK(api().memcpy_d2h(s, back.data(), buf, back.size()));
    KEEL_EXPECT_OK(api().stream_synchronize(s));
    EXPECT_EQ(back, host);
    KEEL_EXPECT_OK(api().device_free(device(), buf));
    KEEL_EXPECT_OK(api().stream_destroy(s));
}

TEST_F(OnFakeDriver, ADeviceLostWhileWorkRunsFailsTheStreamStickily) {
    const keel_stream s = new_stream();
    const keel_device_addr buf = new_buffer(1024);
    keel_event before = nullptr;
    KEEL_ASSERT_OK(api().event_create(device(), 0, &before));
    Gate gate;
    StatusLog statuses;
    std::vector<std::uint8_t> out(1024, 0x77);
    KEEL_ASSERT_OK(gate.hold(api(), s));
    KEEL_ASSERT_OK(api().memset_d8(s, buf, 1, 1024));  // the command the device is lost at
    KEEL_ASSERT_OK(api().event_record(before, s));
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(s, &StatusLog::record, &statuses));
    KEEL_ASSERT_OK(api().memcpy_d2h(s, out.data(), buf, out.size()));
    fake_ze_lose_device(0, 1);
    gate.open();

    const CError sync = outcome(api().stream_synchronize(s));
    EXPECT_EQ(sync.code, KEEL_STATUS_DEVICE_ERROR);
    EXPECT_TRUE(contains(sync.message, "[level_zero stream_synchronize]")) << sync.message;
    EXPECT_TRUE(contains(sync.message, "ZE_RESULT_ERROR_DEVICE_LOST")) << sync.message;
    // The host function enqueued before the loss ran, with the error.
    EXPECT_EQ(statuses.get(), std::vector<keel_status>{KEEL_STATUS_DEVICE_ERROR});
    EXPECT_EQ(out, std::vector<std::uint8_t>(1024, 0x77)) << "nothing after the loss was copied back";
    // Sticky: later enqueues and queries report it.
    const CError later = outcome(api().memset_d8(s, buf, 2, 16));
    EXPECT_EQ(later.code, KEEL_STATUS_DEVICE_ERROR);
    EXPECT_TRUE(contains(later.message, "[level_zero memset_d8] the stream failed earlier:")) << later.message;
    int32_t done = 0;
    KEEL_EXPECT_ERROR(api().stream_query(s, &done), KEEL_STATUS_DEVICE_ERROR);
    KEEL_EXPECT_ERROR(api().stream_enqueue_host_func(s, &StatusLog::record, &statuses), KEEL_STATUS_DEVICE_ERROR);
    const CError event = outcome(api().event_query(before, &done));
    EXPECT_EQ(event.code, KEEL_STATUS_DEVICE_ERROR);
    EXPECT_TRUE(contains(event.message, "zeEventQueryStatus: ZE_RESULT_ERROR_DEVICE_LOST")) << event.message;
    // The device as a whole is gone.
    keel_device_addr more = 0;
    const CError alloc = outcome(api().device_alloc(device(), 64, &more));
    EXPECT_EQ(alloc.code, KEEL_STATUS_DEVICE_ERROR);
    EXPECT_TRUE(contains(alloc.message, "zeMemAllocDevice: ZE_RESULT_ERROR_DEVICE_LOST")) << alloc.message;
    // Everything can still be released, and destroy reports the error.
    KEEL_EXPECT_OK(api().event_destroy(before));
    KEEL_EXPECT_ERROR(api().stream_destroy(s), KEEL_STATUS_DEVICE_ERROR);
    KEEL_EXPECT_OK(api().device_free(device(), buf));
    plugin().shutdown();
    EXPECT_EQ(fake_ze_live_objects(), 0u) << "the plugin released every Level Zero object";
}

TEST_F(OnFakeDriver, AFailedWaitMakesTheStreamStickyEvenIfTheDeviceRecovers) {
    const keel_stream s = new_stream();
    const keel_device_addr buf = new_buffer(64);
    Gate gate;  // keeps the memset pending, so synchronize has to wait for it
    KEEL_ASSERT_OK(gate.hold(api(), s));
    KEEL_ASSERT_OK(api().memset_d8(s, buf, 1, 64));
    fake_ze_fail_calls("zeEventHostSynchronize", ZE_RESULT_ERROR_DEVICE_LOST, 0, 1);
    // Opened while synchronize waits: it reports the failure only once the
    // host function enqueued before it has run.
    std::thread opener([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        gate.open();
    });
    const CError sync = outcome(api().stream_synchronize(s));
    opener.join();
    EXPECT_EQ(sync.code, KEEL_STATUS_DEVICE_ERROR);
    EXPECT_EQ(sync.message, "[level_zero stream_synchronize] zeEventHostSynchronize: ZE_RESULT_ERROR_DEVICE_LOST");
    const CError again = outcome(api().stream_synchronize(s));
    EXPECT_EQ(again.message,
              "[level_zero stream_synchronize] the stream failed earlier: zeEventHostSynchronize: "
              "ZE_RESULT_ERROR_DEVICE_LOST");
    const CError destroyed = outcome(api().stream_destroy(s));
    EXPECT_EQ(destroyed.code, KEEL_STATUS_DEVICE_ERROR) << "stream_destroy returns the sticky error";
    KEEL_EXPECT_OK(api().device_free(device(), buf));
}

TEST_F(OnFakeDriver, AModuleThatFailsToBuildIsReportedByKernelGetAndRetried) {
    fake_ze_fail_calls("zeModuleCreate", ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, 0, 1);
    keel_kernel k = nullptr;
    const CError o = outcome(api().kernel_get(device(), "fill", &k));
    EXPECT_EQ(o.code, KEEL_STATUS_INTERNAL);
    EXPECT_TRUE(contains(o.message, "[level_zero kernel_get] kernel 'fill' on level_zero:0: zeModuleCreate: "
                                    "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE"))
        << o.message;
    KEEL_EXPECT_OK(api().kernel_get(device(), "fill", &k)) << "a failed build is not remembered";
}

TEST_F(OnFakeDriver, AKernelArgumentTheDriverRefusesNamesTheCall) {
    const keel_stream s = new_stream();
    const keel_device_addr buf = new_buffer(64 * sizeof(float));
    keel_kernel fill = nullptr;
    KEEL_ASSERT_OK(api().kernel_get(device(), "fill", &fill));
    const LaunchArgs launch({buffer_arg(buf, 64 * sizeof(float)), f32_arg(2.0f)});
    fake_ze_fail_calls("zeKernelSetArgumentValue", ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE, 1, 1);
    const CError o = outcome(api().kernel_launch(s, fill, launch.get()));
    EXPECT_EQ(o.code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(o.message,
              "[level_zero kernel_launch] zeKernelSetArgumentValue: ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE");
    // The same launch goes through once the driver accepts it.
    KEEL_ASSERT_OK(api().kernel_launch(s, fill, launch.get()));
    std::vector<float> out(64, 0.0f);
    KEEL_ASSERT_OK(api().memcpy_d2h(s, out.data(), buf, 64 * sizeof(float)));
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    EXPECT_EQ(out, std::vector<float>(64, 2.0f));
    KEEL_EXPECT_OK(api().stream_destroy(s));
    KEEL_EXPECT_OK(api().device_free(device(), buf));
}

// An interprocess event, exported and imported in this process (the fake
// driver opens its own pools), recorded behind a host function that fails
// the stream with OUT_OF_RANGE "planted failure <n>" once `gate` opens.
struct FailingInterprocessEvent {
    keel_stream stream = nullptr;
    keel_event exported = nullptr;
    keel_event imported = nullptr;
};

keel_error* plant_failure(void* n, keel_status) {
    return make_c_error(KEEL_STATUS_OUT_OF_RANGE, "planted failure " + std::to_string(*static_cast<int*>(n)));
}

void record_behind_a_failure(const keel_plugin_api& api, keel_device device, Gate& gate, int* n,
                             FailingInterprocessEvent& out) {
    KEEL_ASSERT_OK(api.stream_create(device, 0, &out.stream));
    KEEL_ASSERT_OK(api.event_create(device, KEEL_EVENT_INTERPROCESS, &out.exported));
    keel_ipc_handle h{};
    h.struct_size = KEEL_IPC_HANDLE_STRUCT_SIZE;
    KEEL_ASSERT_OK(api.ipc_event_export(out.exported, &h));
    KEEL_ASSERT_OK(api.ipc_event_import(device, &h, &out.imported));
    ::close(h.fd);
    KEEL_ASSERT_OK(gate.hold(api, out.stream));
    KEEL_ASSERT_OK(api.stream_enqueue_fallible_host_func(out.stream, &plant_failure, n));
    KEEL_ASSERT_OK(api.event_record(out.exported, out.stream));
}

TEST_F(OnFakeDriver, AnInterprocessEventsFailureKeepsItsStatusWhereItsTextCannotCross) {
    // The exporter cannot create the events of the text: the status alone
    // crosses, and the importer's error says why.
    Gate gate, other_gate;
    int first = 1, second = 2;
    FailingInterprocessEvent a, b;
    record_behind_a_failure(api(), device(), gate, &first, a);
    record_behind_a_failure(api(), device(), other_gate, &second, b);
    fake_ze_fail_calls("zeEventCreate", ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, 3, 1);
    gate.open();
    const CError untold = outcome(api().event_synchronize(a.imported));
    EXPECT_EQ(untold.code, KEEL_STATUS_OUT_OF_RANGE) << untold.message;
    EXPECT_TRUE(contains(untold.message, "after its stream failed with OUT_OF_RANGE (its message did not cross"))
        << untold.message;
    EXPECT_FALSE(contains(untold.message, "planted")) << untold.message;

    // The importer cannot create an event to read it with: the status, why,
    // and a later question reads the text.
    other_gate.open();
    KEEL_EXPECT_ERROR(api().stream_synchronize(b.stream), KEEL_STATUS_OUT_OF_RANGE);
    fake_ze_fail_calls("zeEventCreate", ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, 5, 1);
    const CError unread = outcome(api().event_synchronize(b.imported));
    EXPECT_EQ(unread.code, KEEL_STATUS_OUT_OF_RANGE) << unread.message;
    EXPECT_TRUE(contains(unread.message, "(its message could not be read here:")) << unread.message;
    EXPECT_TRUE(contains(unread.message, "zeEventCreate")) << unread.message;
    int32_t done = 0;
    const CError read = outcome(api().event_query(b.imported, &done));
    EXPECT_EQ(read.code, KEEL_STATUS_OUT_OF_RANGE) << read.message;
    EXPECT_TRUE(contains(read.message, "after its stream failed: ")) << read.message;
    EXPECT_TRUE(contains(read.message, "planted failure 2 (OUT_OF_RANGE)")) << read.message;

    for (FailingInterprocessEvent* e : {&a, &b}) {
        KEEL_EXPECT_OK(api().event_destroy(e->imported));
        KEEL_EXPECT_OK(api().event_destroy(e->exported));
        KEEL_EXPECT_ERROR(api().stream_destroy(e->stream), KEEL_STATUS_OUT_OF_RANGE);
    }
    plugin().shutdown();
    EXPECT_EQ(fake_ze_live_objects(), 0u) << "the plugin released every event it created for the texts";
}

}  // namespace
}  // namespace keel::level_zero_test
