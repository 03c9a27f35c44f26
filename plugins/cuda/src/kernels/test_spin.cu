// test_spin(duration_ns: integer scalar): keeps the stream busy for about
// that long, so tests can observe ordering (a wait that did not wait reads
// stale data) and pending states. Test-only: KEEL_CUDA_TEST_KERNELS=1.
#include "kernels/launch.cuh"

namespace keel::cuda {

namespace {

__global__ void spin_kernel(std::uint64_t duration_ns) {
    std::uint64_t start = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    std::uint64_t now = start;
    while (now - start < duration_ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
}

// Long enough for any test, short enough that a mistake does not hang CI.
constexpr std::int64_t kMaxSpinNs = 10'000'000'000;

Result<void> launch_spin(const LaunchContext& ctx, const plugin::LaunchArgsView& args) {
    KEEL_TRY(args.expect_count(1));
    KEEL_TRY_ASSIGN(const std::int64_t ns, args.scalar_i64(0, "duration_ns"));
    if (ns < 0 || ns > kMaxSpinNs)
        return args.invalid("argument 0 (duration_ns) must be in [0, 1e10], got " + std::to_string(ns));
    return launch_kernel<spin_kernel>(ctx, dim3(1), dim3(1), static_cast<std::uint64_t>(ns));
}

}  // namespace

extern const KernelDef kTestSpinKernel{"test_spin", &launch_spin, true};

}  // namespace keel::cuda
