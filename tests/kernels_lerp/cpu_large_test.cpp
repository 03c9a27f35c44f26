// Past 2^31 elements on the CPU kernels (8.6 GB of host memory): run only
// when KEEL_TEST_LARGE_MEMORY=1, skipped with that reason otherwise.
#include "lerp.hpp"

#include <keel/plugin/kernel_args.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <new>

namespace keel::test {
namespace {

keel_kernel_arg arg_buffer(const void* p, std::uint64_t bytes) {
    keel_kernel_arg a{};
    a.struct_size = KEEL_KERNEL_ARG_STRUCT_SIZE;
    a.kind = KEEL_ARG_BUFFER;
    a.dtype = KEEL_DTYPE_F32;
    a.value.buffer = {reinterpret_cast<std::uintptr_t>(p), bytes};
    return a;
}

keel_kernel_arg arg_ints(const std::vector<std::int64_t>& v) {
    keel_kernel_arg a{};
    a.struct_size = KEEL_KERNEL_ARG_STRUCT_SIZE;
    a.kind = KEEL_ARG_INT_ARRAY;
    a.dtype = KEEL_DTYPE_I64;
    a.value.int_array = {v.data(), v.size()};
    return a;
}

TEST(CpuLerpGradLarge, SumsElementsPastTwoToTheThirtyOne) {
    const char* env = std::getenv("KEEL_TEST_LARGE_MEMORY");
    if (!env || std::string(env) != "1") GTEST_SKIP() << "needs 8.6 GB of memory: set KEEL_TEST_LARGE_MEMORY=1";
    const std::int64_t n = (std::int64_t{1} << 31) + 4096;
    std::unique_ptr<float[]> dout(new (std::nothrow) float[static_cast<std::size_t>(n)]);
    if (!dout) GTEST_SKIP() << "could not allocate " << n * 4 << " bytes";
    std::fill_n(dout.get(), n, 1.0f);
    dout[static_cast<std::size_t>(n - 1)] = 1048576.0f;  // a marker in the last element
    float dx = -1.0f;
    const std::vector<std::int64_t> x_shape{1}, y_shape{n}, none{};
    keel_kernel_arg w{};
    w.struct_size = KEEL_KERNEL_ARG_STRUCT_SIZE;
    w.kind = KEEL_ARG_SCALAR;
    w.dtype = KEEL_DTYPE_F64;
    w.value.scalar.f64 = 0.75;
    const std::vector<keel_kernel_arg> args{arg_buffer(nullptr, 0), arg_buffer(nullptr, 0), w,
                                            arg_buffer(dout.get(), static_cast<std::uint64_t>(n) * 4),
                                            arg_buffer(&dx, 4), arg_buffer(nullptr, 0),
                                            arg_ints(x_shape), arg_ints(y_shape), arg_ints(none), arg_ints(y_shape)};
    const keel_launch_args launch{KEEL_LAUNCH_ARGS_STRUCT_SIZE, args.data(), args.size(), sizeof(keel_kernel_arg)};
    const plugin::LaunchArgsView view = *plugin::LaunchArgsView::make(&launch, "lerp_grad");
    const Result<plugin::LerpGradPlan> plan = plugin::plan_lerp_grad(view, cpu::kLerpCpuDtypes);
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    ASSERT_TRUE(cpu::run_lerp_grad(*plan, {dout.get(), nullptr, &dx, nullptr}).ok());
    // 0.25 * (n - 1 + 2^20), accumulated in f64 and rounded once to f32.
    const double want = 0.25 * (static_cast<double>(n - 1) + 1048576.0);
    EXPECT_EQ(dx, static_cast<float>(want));
}

}  // namespace
}  // namespace keel::test
