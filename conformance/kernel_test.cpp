// Kernels by name: results of fill and axpy, and argument validation.
#include "conformance.hpp"

#include <vector>

namespace keel::conformance {
namespace {

TEST_P(Conformance, FillWritesItsValueToEveryElement) {
    KEEL_RULE(1, "kernel.builtin-kernels");
    constexpr std::size_t n = 1000;
    KEEL_FIND_KERNEL_OR_SKIP(fill, "fill");
    EXPECT_EQ(fill.name(), "fill");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, n * sizeof(float)));
    KEEL_ASSERT_OK(s.launch(fill, KernelArgs().buffer(buf, KEEL_DTYPE_F32).scalar(3.5f)));
    KEEL_ASSERT_OK_AND_ASSIGN(auto out, s.copy_to_vector<float>(buf));
    KEEL_ASSERT_OK_AND_ASSIGN(std::vector<float> values, std::move(out).get());
    EXPECT_EQ(values, std::vector<float>(n, 3.5f));
}

TEST_P(Conformance, FillOnASubViewLeavesTheRestAlone) {
    KEEL_RULE(0, "kernel.buffer-bounds");
    KEEL_FIND_KERNEL_OR_SKIP(fill, "fill");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 64 * sizeof(float)));
    KEEL_ASSERT_OK(s.memset(buf, 0));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView part, buf.view(16 * sizeof(float), 8 * sizeof(float)));
    KEEL_ASSERT_OK(s.launch(fill, KernelArgs().buffer(part, KEEL_DTYPE_F32).scalar(-1.0f)));
    std::vector<float> out(64, 9.0f);
    KEEL_ASSERT_OK_AND_ASSIGN(HostCopy copy, s.copy(out, buf));
    KEEL_ASSERT_OK(copy.wait());
    for (std::size_t i = 0; i < 64; ++i) EXPECT_EQ(out[i], (i >= 16 && i < 24) ? -1.0f : 0.0f) << i;
}

TEST_P(Conformance, AxpyComputesAlphaTimesXPlusY) {
    KEEL_RULE(1, "kernel.builtin-kernels");
    constexpr std::size_t n = 4096 + 3;
    KEEL_FIND_KERNEL_OR_SKIP(axpy, "axpy");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer x, Buffer::allocate(s, n * sizeof(float)));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer y, Buffer::allocate(s, n * sizeof(float)));
    std::vector<float> hx(n), hy(n);
    for (std::size_t i = 0; i < n; ++i) {
        hx[i] = static_cast<float>(i);
        hy[i] = static_cast<float>(2 * i) + 0.25f;
    }
    KEEL_ASSERT_OK(s.copy(x, hx));
    KEEL_ASSERT_OK(s.copy(y, hy));
    KEEL_ASSERT_OK(s.launch(axpy, KernelArgs().scalar(0.5f).buffer(x, KEEL_DTYPE_F32).buffer(y, KEEL_DTYPE_F32)));
    KEEL_ASSERT_OK_AND_ASSIGN(auto future, s.copy_to_vector<float>(y));
    KEEL_ASSERT_OK_AND_ASSIGN(std::vector<float> out, std::move(future).get());
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 0.5f * hx[i] + hy[i]) << i;
}

TEST_P(Conformance, AnUnknownKernelNameIsNotFound) {
    KEEL_RULE(0, "kernel.get");
    auto k = Kernel::find(device(), "no_such_kernel");
    if (!k.ok() && k.error().code() == KEEL_STATUS_UNIMPLEMENTED)
        GTEST_SKIP() << device().name() << " has no kernels (optional entry absent)";
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(k.error().code(), KEEL_STATUS_NOT_FOUND) << k.error().message();
    EXPECT_NE(k.error().message().find("no_such_kernel"), std::string::npos) << k.error().message();
}

TEST_P(Conformance, KernelArgumentsOfTheWrongTypeOrCountAreRejectedBeforeAnythingRuns) {
    KEEL_RULE(0, "kernel.launch-validates");
    constexpr std::size_t n = 16;
    KEEL_FIND_KERNEL_OR_SKIP(axpy, "axpy");
    KEEL_FIND_KERNEL_OR_SKIP(fill, "fill");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer x, Buffer::allocate(s, n * sizeof(float)));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer y, Buffer::allocate(s, n * sizeof(float)));
    KEEL_ASSERT_OK(s.memset(y, 0));

    const KernelArgs wrong[] = {
        KernelArgs().scalar(0.5f).buffer(x, KEEL_DTYPE_I32).buffer(y, KEEL_DTYPE_F32),  // dtype
        KernelArgs().buffer(x, KEEL_DTYPE_F32).buffer(x, KEEL_DTYPE_F32).buffer(y, KEEL_DTYPE_F32),  // kind
        KernelArgs().scalar(0.5f).buffer(x, KEEL_DTYPE_F32),  // count
        KernelArgs().scalar(0.5f).buffer(x, KEEL_DTYPE_F32).buffer(y, KEEL_DTYPE_F32).scalar(1.0f),  // count
        KernelArgs().scalar(0.5f).ints({1, 2}).buffer(y, KEEL_DTYPE_F32),  // kind
    };
    for (const KernelArgs& args : wrong) {
        auto r = s.launch(axpy, args);
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.error().code(), KEEL_STATUS_INVALID_ARGUMENT) << r.error().message();
        EXPECT_NE(r.error().message().find("axpy"), std::string::npos) << r.error().message();
    }
    KEEL_EXPECT_ERROR(s.launch(fill, KernelArgs().buffer(y, KEEL_DTYPE_F32)), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.launch(fill, KernelArgs().scalar(1.0f).buffer(y, KEEL_DTYPE_F32)),
                      KEEL_STATUS_INVALID_ARGUMENT);

    KEEL_ASSERT_OK(s.synchronize());  // a rejected launch must not put the stream in error
    KEEL_ASSERT_OK_AND_ASSIGN(auto future, s.copy_to_vector<float>(y));
    KEEL_ASSERT_OK_AND_ASSIGN(std::vector<float> out, std::move(future).get());
    EXPECT_EQ(out, std::vector<float>(n, 0.0f)) << "a rejected launch must enqueue nothing";
}

TEST_P(Conformance, AKernelArgumentThatIsAnEmptyBufferIsRejected) {
    KEEL_RULE(0, "handle.runtime-checks");
    KEEL_FIND_KERNEL_OR_SKIP(fill, "fill");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 64));
    Buffer taken = std::move(buf);
    KEEL_EXPECT_ERROR(s.launch(fill, KernelArgs().buffer(buf, KEEL_DTYPE_F32).scalar(1.0f)),
                      KEEL_STATUS_INVALID_ARGUMENT);
}

TEST_P(Conformance, AKernelBufferOutsideTheDevicesAllocationsIsRejectedAtLaunch) {
    KEEL_RULE_WHERE_IT_CAN_TELL(0, "handle.caller-bugs");
    // docs/kernels.md: refused before anything is enqueued, so the stream
    // stays usable (a raw buffer used after its free, here).
    KEEL_FIND_KERNEL_OR_SKIP(fill, "fill");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer raw, RawBuffer::allocate(device(), 256));
    const DeviceView freed = raw.view();
    KEEL_ASSERT_OK(raw.free());
    const Result<void> launched = s.launch(fill, KernelArgs().buffer(freed, KEEL_DTYPE_F32).scalar(1.0f));
    KEEL_ADVISE_UNLESS(!launched.ok() && launched.error().code() == KEEL_STATUS_INVALID_ARGUMENT)
        << "a kernel buffer that was freed " << (launched.ok() ? "was accepted" : "was refused with another status: " + launched.error().message())
        << " (INVALID_ARGUMENT where the plugin keeps a registry of its allocations)";
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 256));
    KEEL_ASSERT_OK(s.launch(fill, KernelArgs().buffer(buf, KEEL_DTYPE_F32).scalar(2.0f)));
    KEEL_ASSERT_OK_AND_ASSIGN(auto out, s.copy_to_vector<float>(buf));
    KEEL_ASSERT_OK_AND_ASSIGN(std::vector<float> values, std::move(out).get());
    EXPECT_EQ(values, std::vector<float>(64, 2.0f));
    KEEL_EXPECT_OK(s.synchronize());
}

TEST_P(Conformance, KernelsAndBuffersOfAnotherDeviceAreRejected) {
    KEEL_RULE(0, "handle.runtime-checks");
    const Device* other = other_device();
    if (other == nullptr) GTEST_SKIP() << "needs a second device";
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer mine, Buffer::allocate(s, 64));
    KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer theirs, RawBuffer::allocate(*other, 64));
    KEEL_FIND_KERNEL_OR_SKIP(fill, "fill");
    KEEL_EXPECT_ERROR(s.launch(fill, KernelArgs().buffer(theirs, KEEL_DTYPE_F32).scalar(1.0f)),
                      KEEL_STATUS_INVALID_ARGUMENT);
    auto foreign_fill = Kernel::find(*other, "fill");
    if (foreign_fill.ok()) {
        KEEL_EXPECT_ERROR(s.launch(*foreign_fill, KernelArgs().buffer(mine, KEEL_DTYPE_F32).scalar(1.0f)),
                          KEEL_STATUS_INVALID_ARGUMENT);
    }
}

}  // namespace
}  // namespace keel::conformance
