// Past 2^31 elements on the CPU kernels (8.6 GB of host memory): run only
// when KEEL_TEST_LARGE_MEMORY=1, skipped with that reason otherwise.
#include "lerp.hpp"

#include <keel/environment.hpp>
#include <keel/plugin/kernel_args.hpp>
#include <keel/testing/knob.hpp>
#include <keel/testing/launch_args.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <new>

namespace keel::test {
namespace {

keel_device_addr host_addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

TEST(CpuLerpGradLarge, SumsElementsPastTwoToTheThirtyOne) {
    if (!keel::testing::knob(env::flag(env::Var::test_large_memory), false))
        GTEST_SKIP() << "needs 8.6 GB of memory: set KEEL_TEST_LARGE_MEMORY=1";
    const std::int64_t n = (std::int64_t{1} << 31) + 4096;
    std::unique_ptr<float[]> dout(new (std::nothrow) float[static_cast<std::size_t>(n)]);
    if (!dout) GTEST_SKIP() << "could not allocate " << n * 4 << " bytes";
    std::fill_n(dout.get(), n, 1.0f);
    dout[static_cast<std::size_t>(n - 1)] = 1048576.0f;  // a marker in the last element
    float dx = -1.0f;
    keel::testing::LaunchArgs args;
    args.absent(KEEL_DTYPE_F32).absent(KEEL_DTYPE_F32).scalar_f64(0.75);
    args.buffer(host_addr(dout.get()), static_cast<std::uint64_t>(n) * 4, KEEL_DTYPE_F32);
    args.buffer(host_addr(&dx), 4, KEEL_DTYPE_F32).absent(KEEL_DTYPE_F32);
    args.ints({1}).ints({n}).ints({}).ints({n});
    const plugin::LaunchArgsView view = *plugin::LaunchArgsView::make(args.get(), "lerp_grad");
    const Result<plugin::LerpGradPlan> plan = plugin::plan_lerp_grad(view, cpu::kLerpCpuDtypes);
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    ASSERT_TRUE(cpu::run_lerp_grad(*plan, {dout.get(), nullptr, &dx, nullptr}).ok());
    // 0.25 * (n - 1 + 2^20), accumulated in f64 and rounded once to f32.
    const double want = 0.25 * (static_cast<double>(n - 1) + 1048576.0);
    EXPECT_EQ(dx, static_cast<float>(want));
}

}  // namespace
}  // namespace keel::test
