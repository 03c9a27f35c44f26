// The plugin on a fake driver with a VPU and two GPUs without fp64 or IPC
// (ctest sets FAKE_ZE_DEVICES=vpu,gpu,gpu, FAKE_ZE_NO_FP64=1 and
// FAKE_ZE_NO_IPC=1): only GPUs become keel devices, objects of one device
// are refused on another by name, lerp in f64 is UNIMPLEMENTED where the
// device has no fp64, and a driver without memory IPC gives neither the
// capability nor the entries.
#include "fake_fixture.hpp"

#include <vector>

namespace keel::level_zero_test {
namespace {

TEST_F(OnFakeDriver, OnlyGpusBecomeDevicesAndTheStatusSaysWhatWasSkipped) {
    ASSERT_EQ(plugin().device_count(), 2u);
    EXPECT_TRUE(contains(plugin().status(), "'keel fake Level Zero device 0' skipped: a VPU, not a GPU"))
        << plugin().status();
    keel_device_properties props{};
    props.struct_size = KEEL_DEVICE_PROPERTIES_STRUCT_SIZE;
    KEEL_ASSERT_OK(api().device_properties(device(1), &props));
    EXPECT_STREQ(props.name, "keel fake Level Zero device 2");
    EXPECT_STREQ(props.vendor, "Intel");
}

TEST_F(OnFakeDriver, ADriverWithoutMemoryIpcGivesNeitherTheCapabilityNorTheEntries) {
    for (std::uint32_t i = 0; i < plugin().device_count(); ++i) {
        keel_device_properties props{};
        props.struct_size = KEEL_DEVICE_PROPERTIES_STRUCT_SIZE;
        KEEL_ASSERT_OK(api().device_properties(device(i), &props));
        EXPECT_EQ(props.capabilities & (KEEL_DEVICE_CAP_IPC_MEMORY | KEEL_DEVICE_CAP_IPC_EVENTS), 0u) << i;
    }
    EXPECT_EQ(api().ipc_memory_alloc, nullptr);
    EXPECT_EQ(api().ipc_memory_export, nullptr);
    EXPECT_EQ(api().ipc_memory_import, nullptr);
    EXPECT_EQ(api().ipc_memory_close, nullptr);
    EXPECT_EQ(api().ipc_event_export, nullptr);
    EXPECT_EQ(api().ipc_event_import, nullptr);
    keel_event shared = nullptr;
    KEEL_EXPECT_ERROR(api().event_create(device(0), KEEL_EVENT_INTERPROCESS, &shared), KEEL_STATUS_INVALID_ARGUMENT);
}

TEST_F(OnFakeDriver, MemoryEventsAndKernelsOfAnotherDeviceAreRefusedByName) {
    const keel_device other = device(1);
    const keel_stream s = new_stream();
    keel_device_addr theirs = 0;
    KEEL_ASSERT_OK(api().device_alloc(other, 64, &theirs));
    std::vector<std::uint8_t> host(64);
    const CError copy = outcome(api().memcpy_h2d(s, theirs, host.data(), 64));
    EXPECT_EQ(copy.code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(copy.message, "is not a device allocation of level_zero:0: it is memory of level_zero:1"))
        << copy.message;
    KEEL_EXPECT_ERROR(api().device_free(device(), theirs), KEEL_STATUS_INVALID_ARGUMENT);
    keel_event e = nullptr;
    KEEL_ASSERT_OK(api().event_create(other, 0, &e));
    KEEL_EXPECT_ERROR(api().event_record(e, s), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(api().stream_wait_event(s, e), KEEL_STATUS_INVALID_ARGUMENT);
    keel_kernel fill = nullptr;
    KEEL_ASSERT_OK(api().kernel_get(other, "fill", &fill));
    const LaunchArgs none;
    const CError launch = outcome(api().kernel_launch(s, fill, none.get()));
    EXPECT_EQ(launch.code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(launch.message, "of level_zero:1 launched on a stream of level_zero:0")) << launch.message;
    KEEL_EXPECT_OK(api().event_destroy(e));
    KEEL_EXPECT_OK(api().device_free(other, theirs));
    KEEL_EXPECT_OK(api().stream_destroy(s));
}

TEST_F(OnFakeDriver, LerpInF64IsUnimplementedWithoutFp64AndF32Runs) {
    const keel_stream s = new_stream();
    keel_kernel lerp = nullptr;
    KEEL_ASSERT_OK(api().kernel_get(device(), "lerp", &lerp));
    for (keel_dtype dtype : {KEEL_DTYPE_F64, KEEL_DTYPE_F32}) {
        const std::uint64_t bytes = 4 * (dtype == KEEL_DTYPE_F64 ? 8 : 4);
        keel_device_addr x = 0, y = 0, out = 0;
        KEEL_ASSERT_OK(api().device_alloc(device(), bytes, &x));
        KEEL_ASSERT_OK(api().device_alloc(device(), bytes, &y));
        KEEL_ASSERT_OK(api().device_alloc(device(), bytes, &out));
        KEEL_ASSERT_OK(api().memset_d8(s, x, 0, bytes));
        KEEL_ASSERT_OK(api().memset_d8(s, y, 0, bytes));
        // lerp(x, y, w = 0.5, out) over shape [4], w a scalar (shape []).
        LaunchArgs launch({buffer_arg(x, bytes, dtype), buffer_arg(y, bytes, dtype), f64_arg(0.5),
                           buffer_arg(out, bytes, dtype)});
        launch.ints({4}).ints({4}).ints(std::vector<std::int64_t>{}).ints({4});
        const CError o = outcome(api().kernel_launch(s, lerp, launch.get()));
        if (dtype == KEEL_DTYPE_F64) EXPECT_EQ(o.code, KEEL_STATUS_UNIMPLEMENTED) << o.message;
        else EXPECT_EQ(o.code, KEEL_STATUS_OK) << o.message;
        KEEL_ASSERT_OK(api().stream_synchronize(s));
        for (keel_device_addr a : {x, y, out}) KEEL_EXPECT_OK(api().device_free(device(), a));
    }
    KEEL_EXPECT_OK(api().stream_destroy(s));
}

}  // namespace
}  // namespace keel::level_zero_test
