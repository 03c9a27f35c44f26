// Kernels by name: results computed on the GPU, and argument validation
// that rejects a bad launch before anything is enqueued.
#include "cuda_plugin_fixture.hpp"

#include <vector>

namespace keel::cuda_test {
namespace {

using CudaKernel = CudaDeviceTest;

TEST_F(CudaKernel, FillAndAxpyComputeOnTheDevice) {
    constexpr std::size_t n = (1u << 20) + 3;  // more elements than one grid pass, odd tail
    Stream stream(api(), device());
    DeviceBuffer x(api(), device(), n * sizeof(float));
    DeviceBuffer y(api(), device(), n * sizeof(float));
    ASSERT_EQ(launch(stream.get(), "fill", {buffer_arg(x.addr(), x.size()), f32_arg(2.0f)}).code, KEEL_STATUS_OK);
    ASSERT_EQ(launch(stream.get(), "fill", {buffer_arg(y.addr(), y.size()), f32_arg(1.0f)}).code, KEEL_STATUS_OK);
    Outcome axpy = launch(stream.get(), "axpy",
                          {f32_arg(3.0f), buffer_arg(x.addr(), x.size()), buffer_arg(y.addr(), y.size())});
    ASSERT_EQ(axpy.code, KEEL_STATUS_OK) << axpy.message;
    const std::vector<float> result = read_floats(api(), stream.get(), y);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(result[i], 7.0f) << "at element " << i;
}

TEST_F(CudaKernel, FillTouchesOnlyItsBuffer) {
    Stream stream(api(), device());
    DeviceBuffer buf(api(), device(), 64 * sizeof(float));
    KEEL_ASSERT_OK(api().memset_d8(stream.get(), buf.addr(), 0, buf.size()));
    // A sub-range of an allocation is a valid buffer.
    ASSERT_EQ(launch(stream.get(), "fill", {buffer_arg(buf.addr() + 8 * sizeof(float), 16 * sizeof(float)),
                                            f32_arg(-1.5f)})
                  .code,
              KEEL_STATUS_OK);
    const std::vector<float> result = read_floats(api(), stream.get(), buf);
    for (std::size_t i = 0; i < result.size(); ++i)
        ASSERT_EQ(result[i], (i >= 8 && i < 24) ? -1.5f : 0.0f) << "at element " << i;
}

TEST_F(CudaKernel, NoopTakesNoArguments) {
    Stream stream(api(), device());
    EXPECT_EQ(launch(stream.get(), "noop", {}).code, KEEL_STATUS_OK);
    Outcome extra = launch(stream.get(), "noop", {f32_arg(1.0f)});
    EXPECT_EQ(extra.code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(extra.message.find("[noop] expected 0 arguments, got 1"), std::string::npos) << extra.message;
    KEEL_EXPECT_OK(api().stream_synchronize(stream.get()));
}

TEST_F(CudaKernel, AnUnknownNameIsNotFoundAndListsTheKernels) {
    keel_kernel k = nullptr;
    Outcome o = outcome(api().kernel_get(device(), "gemm", &k));
    EXPECT_EQ(o.code, KEEL_STATUS_NOT_FOUND);
    EXPECT_EQ(k, nullptr);
    EXPECT_NE(o.message.find("no kernel 'gemm' on cuda:0"), std::string::npos) << o.message;
    EXPECT_NE(o.message.find("axpy"), std::string::npos) << o.message;
    EXPECT_NE(o.message.find("fill"), std::string::npos) << o.message;
}

TEST_F(CudaKernel, BadArgumentsAreRejectedNamingTheArgument) {
    Stream stream(api(), device());
    DeviceBuffer x(api(), device(), 256 * sizeof(float));
    DeviceBuffer y(api(), device(), 256 * sizeof(float));
    DeviceBuffer small(api(), device(), 128 * sizeof(float));
    KEEL_ASSERT_OK(api().memset_d8(stream.get(), y.addr(), 0, y.size()));

    struct Case {
        const char* what;
        std::vector<keel_kernel_arg> args;
        keel_status code;
        const char* message_part;
    };
    const std::vector<Case> cases = {
        {"too few", {f32_arg(1.0f), buffer_arg(x.addr(), x.size())}, KEEL_STATUS_INVALID_ARGUMENT,
         "[axpy] expected 3 arguments, got 2"},
        {"integer alpha", {i64_arg(2), buffer_arg(x.addr(), x.size()), buffer_arg(y.addr(), y.size())},
         KEEL_STATUS_INVALID_ARGUMENT, "argument 0 (alpha)"},
        {"scalar for y", {f32_arg(1.0f), buffer_arg(x.addr(), x.size()), f32_arg(2.0f)},
         KEEL_STATUS_INVALID_ARGUMENT, "argument 2 (y): expected buffer of f32, got scalar f32"},
        {"i32 buffer",
         {f32_arg(1.0f), buffer_arg(x.addr(), x.size(), KEEL_DTYPE_I32), buffer_arg(y.addr(), y.size())},
         KEEL_STATUS_INVALID_ARGUMENT, "argument 1 (x)"},
        {"sizes differ", {f32_arg(1.0f), buffer_arg(small.addr(), small.size()), buffer_arg(y.addr(), y.size())},
         KEEL_STATUS_INVALID_ARGUMENT, "sizes must be equal"},
        {"past the allocation", {f32_arg(1.0f), buffer_arg(x.addr() + 4, x.size()), buffer_arg(y.addr(), y.size())},
         KEEL_STATUS_OUT_OF_RANGE, "argument 1 (x)"},
        {"not an allocation", {f32_arg(1.0f), buffer_arg(0x1000, x.size()), buffer_arg(y.addr(), y.size())},
         KEEL_STATUS_INVALID_ARGUMENT, "is not a device allocation"},
    };
    for (const Case& c : cases) {
        Outcome o = launch(stream.get(), "axpy", c.args);
        EXPECT_EQ(o.code, c.code) << c.what << ": " << o.message;
        EXPECT_NE(o.message.find(c.message_part), std::string::npos) << c.what << ": " << o.message;
        EXPECT_EQ(o.message.rfind("[cuda kernel_launch] ", 0), 0u) << c.what << ": " << o.message;
    }
    // Nothing was enqueued: y is untouched and the stream healthy.
    for (float v : read_floats(api(), stream.get(), y)) ASSERT_EQ(v, 0.0f);
}

TEST_F(CudaKernel, LaunchArgumentsFromANewerCallerAreReadWithItsStride) {
    // A caller built against a later minor passes a larger keel_kernel_arg.
    struct WideArg {
        keel_kernel_arg arg;
        uint64_t appended_field;
    };
    Stream stream(api(), device());
    DeviceBuffer buf(api(), device(), 32 * sizeof(float));
    std::vector<WideArg> wide = {{buffer_arg(buf.addr(), buf.size()), 0xDEAD}, {f32_arg(9.0f), 0xBEEF}};
    const keel_launch_args l{KEEL_LAUNCH_ARGS_STRUCT_SIZE, &wide[0].arg, wide.size(), sizeof(WideArg)};
    KEEL_ASSERT_OK(api().kernel_launch(stream.get(), kernel("fill"), &l));
    for (float v : read_floats(api(), stream.get(), buf)) ASSERT_EQ(v, 9.0f);
}

TEST_F(CudaKernel, AKernelOfAnotherDeviceIsRejected) {
    uint32_t n = 0;
    KEEL_ASSERT_OK(api().device_count(&n));
    if (n < 2) GTEST_SKIP() << "needs two CUDA devices";
    keel_device other = nullptr;
    KEEL_ASSERT_OK(api().device_get(1, &other));
    keel_kernel foreign = nullptr;
    KEEL_ASSERT_OK(api().kernel_get(other, "noop", &foreign));
    Stream stream(api(), device());
    const LaunchArgs none;
    Outcome o = outcome(api().kernel_launch(stream.get(), foreign, none.get()));
    EXPECT_EQ(o.code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(o.message.find("kernel 'noop' of cuda:1 launched on a stream of cuda:0"), std::string::npos)
        << o.message;
}

TEST_F(CudaKernel, NullKernelOrArgumentsAreRejected) {
    Stream stream(api(), device());
    const LaunchArgs none;
    EXPECT_EQ(outcome(api().kernel_launch(stream.get(), nullptr, none.get())).code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(outcome(api().kernel_launch(stream.get(), kernel("noop"), nullptr)).code,
              KEEL_STATUS_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace keel::cuda_test
