// The CUDA device's `lerp` and `lerp_grad` table entries (signatures:
// docs/kernels.md). Arguments are parsed and planned by plugins/support
// (the same validation as every plugin), every buffer is checked to lie in
// a live allocation of this device (plugin::check_buffers), then the plan is enqueued
// (lerp_forward.cu, lerp_grad.cu, lerp_grad_reduce.cu).
#include "kernels/launch.cuh"
#include "kernels/lerp.cuh"

namespace keel::cuda {

namespace {

Result<void> launch_lerp(const LaunchContext& ctx, const plugin::LaunchArgsView& args) {
    KEEL_TRY_ASSIGN(const plugin::LerpPlan plan, plugin::plan_lerp(args, kLerpCudaDtypes));
    KEEL_TRY(plugin::check_buffers(args, plugin::kLerpBuffers, ctx.inside()));
    return enqueue_lerp(plan, ctx.stream);
}

Result<void> launch_lerp_grad(const LaunchContext& ctx, const plugin::LaunchArgsView& args) {
    KEEL_TRY_ASSIGN(const plugin::LerpGradPlan plan, plugin::plan_lerp_grad(args, kLerpCudaDtypes));
    KEEL_TRY(plugin::check_buffers(args, plugin::kLerpGradBuffers, ctx.inside()));
    return enqueue_lerp_grad(plan, ctx.stream, ctx.scratch);
}

}  // namespace

extern const KernelDef kLerpKernel{"lerp", &launch_lerp, false};
extern const KernelDef kLerpGradKernel{"lerp_grad", &launch_lerp_grad, false};

}  // namespace keel::cuda
