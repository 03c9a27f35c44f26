// The fill and axpy kernels, and kernel argument validation.
#include "cpu_test.hpp"

namespace keel::cpu::testing {
namespace {

class CpuKernels : public CpuPluginTest {
protected:
    std::optional<CError> launch(keel_stream s, keel_kernel k, const std::vector<keel_kernel_arg>& args) {
        const LaunchArgs l(args);
        return take(api().kernel_launch(s, k, l.get()));
    }
};

TEST_F(CpuKernels, FillWritesTheValueEverywhere) {
    keel_stream s = stream();
    constexpr size_t n = 1000;
    keel_device_addr out = alloc(n * 4);
    ASSERT_FALSE(launch(s, kernel("fill"), {buffer_arg(out, n * 4), f32_arg(2.5f)}));
    for (float v : read_f32(s, out, n)) ASSERT_EQ(v, 2.5f);
}

TEST_F(CpuKernels, AxpyComputesAlphaXPlusY) {
    keel_stream s = stream();
    for (size_t n : {size_t{1}, size_t{1000}, size_t{1} << 20}) {  // the last one uses the pool
        std::vector<float> x(n), y(n);
        for (size_t i = 0; i < n; ++i) {
            x[i] = static_cast<float>(i % 97);
            y[i] = static_cast<float>(i % 13) - 5.0f;
        }
        keel_device_addr dx = alloc(n * 4), dy = alloc(n * 4);
        KEEL_ASSERT_OK(api().memcpy_h2d(s, dx, x.data(), n * 4));
        KEEL_ASSERT_OK(api().memcpy_h2d(s, dy, y.data(), n * 4));
        ASSERT_FALSE(launch(s, kernel("axpy"), {f32_arg(3.0f), buffer_arg(dx, n * 4), buffer_arg(dy, n * 4)}));
        auto out = read_f32(s, dy, n);
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 3.0f * x[i] + y[i]) << i;
    }
}

TEST_F(CpuKernels, KernelsOnOneStreamRunInOrderWithCopies) {
    keel_stream s = stream();
    keel_device_addr x = alloc(16), y = alloc(16);
    ASSERT_FALSE(launch(s, kernel("fill"), {buffer_arg(x, 16), f32_arg(1.0f)}));
    ASSERT_FALSE(launch(s, kernel("fill"), {buffer_arg(y, 16), f32_arg(10.0f)}));
    for (int i = 0; i < 5; ++i)
        ASSERT_FALSE(launch(s, kernel("axpy"), {f32_arg(2.0f), buffer_arg(x, 16), buffer_arg(y, 16)}));
    for (float v : read_f32(s, y, 4)) EXPECT_EQ(v, 20.0f);
}

TEST_F(CpuKernels, AnUnknownKernelIsNotFoundAndTheErrorListsTheKnownOnes) {
    keel_kernel k = nullptr;
    auto e = take(api().kernel_get(dev(), "gemm", &k));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_NOT_FOUND);
    EXPECT_NE(e->message.find("axpy"), std::string::npos) << e->message;
    EXPECT_NE(e->message.find("gemm"), std::string::npos) << e->message;
}

TEST_F(CpuKernels, RejectsTheWrongArgumentCountBeforeEnqueuing) {
    keel_stream s = stream();
    keel_device_addr x = alloc(16);
    auto e = launch(s, kernel("axpy"), {f32_arg(1.0f), buffer_arg(x, 16)});
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(e->message.find("expected 3 arguments, got 2"), std::string::npos) << e->message;
}

TEST_F(CpuKernels, RejectsAnArgumentOfTheWrongKindOrDtypeNamingIt) {
    keel_stream s = stream();
    keel_device_addr x = alloc(16), y = alloc(16);
    auto e = launch(s, kernel("axpy"), {f32_arg(1.0f), buffer_arg(x, 16), i64_arg(3)});
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(e->message.find("argument 2 (y)"), std::string::npos) << e->message;
    e = launch(s, kernel("axpy"), {f32_arg(1.0f), buffer_arg(x, 16, KEEL_DTYPE_I32), buffer_arg(y, 16)});
    ASSERT_TRUE(e);
    EXPECT_NE(e->message.find("argument 1 (x)"), std::string::npos) << e->message;
    e = launch(s, kernel("fill"), {buffer_arg(x, 16), i64_arg(1)});
    ASSERT_TRUE(e);
    EXPECT_NE(e->message.find("argument 1 (value)"), std::string::npos) << e->message;
}

TEST_F(CpuKernels, AxpyRejectsBuffersOfDifferentSizes) {
    keel_stream s = stream();
    keel_device_addr x = alloc(16), y = alloc(32);
    auto e = launch(s, kernel("axpy"), {f32_arg(1.0f), buffer_arg(x, 16), buffer_arg(y, 32)});
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(e->message.find("must be equal"), std::string::npos) << e->message;
}

TEST_F(CpuKernels, ABufferArgumentLargerThanItsAllocationIsRefusedAtLaunch) {
    // docs/kernels.md: before anything is enqueued, so the stream stays usable.
    keel_stream s = stream();
    keel_device_addr x = alloc(16);
    auto e = launch(s, kernel("fill"), {buffer_arg(x, 1024), f32_arg(1.0f)});
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(e->message.find("[cpu kernel_launch] [fill]"), std::string::npos) << e->message;
    EXPECT_NE(e->message.find("(out)"), std::string::npos) << e->message;
    EXPECT_FALSE(launch(s, kernel("fill"), {buffer_arg(x, 16), f32_arg(1.0f)}));
    KEEL_EXPECT_OK(api().stream_synchronize(s));
}

TEST_F(CpuKernels, LaunchRejectsNullAndForeignHandles) {
    keel_stream s = stream();
    const LaunchArgs l;
    auto e = take(api().kernel_launch(s, nullptr, l.get()));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_INVALID_ARGUMENT);
    int not_a_kernel = 0;
    e = take(api().kernel_launch(s, reinterpret_cast<keel_kernel>(&not_a_kernel), l.get()));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_INVALID_ARGUMENT);
    e = take(api().kernel_launch(s, kernel("fill"), nullptr));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace keel::cpu::testing
