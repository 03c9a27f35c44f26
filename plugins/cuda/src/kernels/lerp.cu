// The CUDA device's `lerp` and `lerp_grad` table entries (signatures:
// docs/kernels.md). Arguments are parsed and planned by plugins/support
// (the same validation as every plugin), every buffer is checked to lie in
// a live allocation of this device, then the plan is enqueued
// (lerp_forward.cu, lerp_grad.cu, lerp_grad_reduce.cu).
#include "kernels/launch.cuh"
#include "kernels/lerp.cuh"

namespace keel::cuda {

namespace {

// Checks that every present buffer argument in `indices` lies inside one
// live allocation of the launch's device.
Result<void> check_allocations(const LaunchContext& ctx, const plugin::LaunchArgsView& args,
                               std::initializer_list<std::pair<std::size_t, const char*>> indices) {
    for (const auto& [index, role] : indices) {
        if (args.kind(index) != KEEL_ARG_BUFFER) continue;  // a scalar weight
        KEEL_TRY(ctx.buffer(args, index, role, {}, /*optional=*/true));
    }
    return ok();
}

Result<void> launch_lerp(const LaunchContext& ctx, const plugin::LaunchArgsView& args) {
    KEEL_TRY_ASSIGN(const plugin::LerpPlan plan, plugin::plan_lerp(args, kLerpCudaDtypes));
    KEEL_TRY(check_allocations(ctx, args, {{0, "x"}, {1, "y"}, {2, "w"}, {3, "out"}}));
    return enqueue_lerp(plan, ctx.stream);
}

Result<void> launch_lerp_grad(const LaunchContext& ctx, const plugin::LaunchArgsView& args) {
    KEEL_TRY_ASSIGN(const plugin::LerpGradPlan plan, plugin::plan_lerp_grad(args, kLerpCudaDtypes));
    KEEL_TRY(check_allocations(ctx, args, {{0, "x"}, {1, "y"}, {2, "w"}, {3, "dout"}, {4, "dx"}, {5, "dy"}}));
    return enqueue_lerp_grad(plan, ctx.stream, ctx.scratch);
}

}  // namespace

extern const KernelDef kLerpKernel{"lerp", &launch_lerp, false};
extern const KernelDef kLerpGradKernel{"lerp_grad", &launch_lerp_grad, false};

}  // namespace keel::cuda
