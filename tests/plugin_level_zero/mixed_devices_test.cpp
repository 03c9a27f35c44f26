// The plugin on a fake driver with a VPU and two GPUs without fp64 (ctest
// sets FAKE_ZE_DEVICES=vpu,gpu,gpu and FAKE_ZE_NO_FP64=1): only GPUs become
// keel devices, objects of one device are refused on another by name, and
// lerp in f64 is UNIMPLEMENTED where the device has no fp64.
#include "fake_fixture.hpp"

#include <vector>

namespace keel::level_zero_test {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST_F(OnFakeDriver, OnlyGpusBecomeDevicesAndTheStatusSaysWhatWasSkipped) {
    ASSERT_EQ(plugin().device_count(), 2u);
    EXPECT_TRUE(contains(plugin().status(), "'keel fake Level Zero device 0' skipped: a VPU, not a GPU"))
        << plugin().status();
    keel_device_properties props{};
    props.struct_size = KEEL_DEVICE_PROPERTIES_STRUCT_SIZE;
    ASSERT_TRUE(succeeded(api().device_properties(plugin().device(1), &props)));
    EXPECT_STREQ(props.name, "keel fake Level Zero device 2");
    EXPECT_STREQ(props.vendor, "Intel");
}

TEST_F(OnFakeDriver, MemoryEventsAndKernelsOfAnotherDeviceAreRefusedByName) {
    const keel_device other = plugin().device(1);
    const keel_stream s = new_stream();
    keel_device_addr theirs = 0;
    ASSERT_TRUE(succeeded(api().device_alloc(other, 64, &theirs)));
    std::vector<std::uint8_t> host(64);
    const Outcome copy = take(api().memcpy_h2d(s, theirs, host.data(), 64));
    EXPECT_EQ(copy.code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(copy.message, "is not a device allocation of level_zero:0: it is memory of level_zero:1"))
        << copy.message;
    EXPECT_EQ(take(api().device_free(device(), theirs)).code, KEEL_STATUS_INVALID_ARGUMENT);
    keel_event e = nullptr;
    ASSERT_TRUE(succeeded(api().event_create(other, 0, &e)));
    EXPECT_EQ(take(api().event_record(e, s)).code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(take(api().stream_wait_event(s, e)).code, KEEL_STATUS_INVALID_ARGUMENT);
    keel_kernel fill = nullptr;
    ASSERT_TRUE(succeeded(api().kernel_get(other, "fill", &fill)));
    const keel_launch_args none{KEEL_LAUNCH_ARGS_STRUCT_SIZE, nullptr, 0, sizeof(keel_kernel_arg)};
    const Outcome launch = take(api().kernel_launch(s, fill, &none));
    EXPECT_EQ(launch.code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(launch.message, "of level_zero:1 launched on a stream of level_zero:0")) << launch.message;
    EXPECT_TRUE(succeeded(api().event_destroy(e)));
    EXPECT_TRUE(succeeded(api().device_free(other, theirs)));
    EXPECT_TRUE(succeeded(api().stream_destroy(s)));
}

TEST_F(OnFakeDriver, LerpInF64IsUnimplementedWithoutFp64AndF32Runs) {
    const keel_stream s = new_stream();
    keel_kernel lerp = nullptr;
    ASSERT_TRUE(succeeded(api().kernel_get(device(), "lerp", &lerp)));
    for (keel_dtype dtype : {KEEL_DTYPE_F64, KEEL_DTYPE_F32}) {
        const std::uint64_t bytes = 4 * (dtype == KEEL_DTYPE_F64 ? 8 : 4);
        keel_device_addr x = 0, y = 0, out = 0;
        ASSERT_TRUE(succeeded(api().device_alloc(device(), bytes, &x)));
        ASSERT_TRUE(succeeded(api().device_alloc(device(), bytes, &y)));
        ASSERT_TRUE(succeeded(api().device_alloc(device(), bytes, &out)));
        ASSERT_TRUE(succeeded(api().memset_d8(s, x, 0, bytes)));
        ASSERT_TRUE(succeeded(api().memset_d8(s, y, 0, bytes)));
        const std::int64_t shape[1] = {4};
        keel_kernel_arg args[8]{};
        for (auto& a : args) a.struct_size = KEEL_KERNEL_ARG_STRUCT_SIZE;
        const keel_device_addr buffers[3] = {x, y, 0};
        for (int i = 0; i < 2; ++i) {
            args[i].kind = KEEL_ARG_BUFFER;
            args[i].dtype = dtype;
            args[i].value.buffer = {buffers[i], bytes};
        }
        args[2].kind = KEEL_ARG_SCALAR;
        args[2].dtype = KEEL_DTYPE_F64;
        args[2].value.scalar.f64 = 0.5;
        args[3].kind = KEEL_ARG_BUFFER;
        args[3].dtype = dtype;
        args[3].value.buffer = {out, bytes};
        for (int i = 4; i < 8; ++i) {
            args[i].kind = KEEL_ARG_INT_ARRAY;
            args[i].dtype = KEEL_DTYPE_I64;
            args[i].value.int_array = {shape, i == 6 ? 0u : 1u};
        }
        const keel_launch_args launch{KEEL_LAUNCH_ARGS_STRUCT_SIZE, args, 8, sizeof(keel_kernel_arg)};
        const Outcome o = take(api().kernel_launch(s, lerp, &launch));
        if (dtype == KEEL_DTYPE_F64) EXPECT_EQ(o.code, KEEL_STATUS_UNIMPLEMENTED) << o.message;
        else EXPECT_TRUE(o.ok()) << o.message;
        ASSERT_TRUE(succeeded(api().stream_synchronize(s)));
        for (keel_device_addr a : {x, y, out}) EXPECT_TRUE(succeeded(api().device_free(device(), a)));
    }
    EXPECT_TRUE(succeeded(api().stream_destroy(s)));
}

}  // namespace
}  // namespace keel::level_zero_test
