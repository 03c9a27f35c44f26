// noop(): does nothing, on one thread. Measures the cost of a launch.
#include "kernels/launch.cuh"

namespace keel::cuda {

namespace {

__global__ void noop_kernel() {}

Result<void> launch_noop(const LaunchContext& ctx, const plugin::LaunchArgsView& args) {
    KEEL_TRY(args.expect_count(0));
    return launch_kernel<noop_kernel>(ctx, dim3(1), dim3(1));
}

}  // namespace

extern const KernelDef kNoopKernel{"noop", &launch_noop, false};

}  // namespace keel::cuda
