// The CPU device's `lerp` and `lerp_grad` entries (signatures:
// docs/kernels.md). Arguments are parsed and planned by plugins/support
// (the same validation as every plugin); the plan runs on the stream's
// worker over the translated host pointers.
#include "../kernel_registry.hpp"
#include "lerp.hpp"

namespace keel::cpu::kernels {

Result<KernelWork> validate_lerp(const plugin::LaunchArgsView& args) {
    KEEL_TRY_ASSIGN(plugin::LerpPlan plan, plugin::plan_lerp(args, kLerpCpuDtypes));
    KernelWork work;
    KEEL_TRY_ASSIGN(const std::size_t xi, work.use(plan.x, Access::read, "x"));
    KEEL_TRY_ASSIGN(const std::size_t yi, work.use(plan.y, Access::read, "y"));
    KEEL_TRY_ASSIGN(const std::size_t wi, work.use(plan.w.is_scalar ? plugin::BufferArg{} : plan.w.buffer, Access::read, "w"));
    KEEL_TRY_ASSIGN(const std::size_t oi, work.use(plan.out, Access::write, "out"));
    work.body = [plan = std::move(plan), xi, yi, wi, oi](const KernelBuffers& b) -> Result<void> {
        return run_lerp(plan, {b.get<const void>(xi), b.get<const void>(yi), b.get<const void>(wi),
                               b.get<void>(oi)});
    };
    return work;
}

Result<KernelWork> validate_lerp_grad(const plugin::LaunchArgsView& args) {
    KEEL_TRY_ASSIGN(plugin::LerpGradPlan plan, plugin::plan_lerp_grad(args, kLerpCpuDtypes));
    KernelWork work;
    KEEL_TRY_ASSIGN(const std::size_t wi, work.use(plan.w.is_scalar ? plugin::BufferArg{} : plan.w.buffer, Access::read, "w"));
    KEEL_TRY_ASSIGN(const std::size_t di, work.use(plan.dout, Access::read, "dout"));
    KEEL_TRY_ASSIGN(const std::size_t dxi, work.use(plan.dx, Access::write, "dx"));
    KEEL_TRY_ASSIGN(const std::size_t dyi, work.use(plan.dy, Access::write, "dy"));
    work.body = [plan = std::move(plan), wi, di, dxi, dyi](const KernelBuffers& b) -> Result<void> {
        return run_lerp_grad(plan, {b.get<const void>(di), b.get<const void>(wi), b.get<void>(dxi),
                                    b.get<void>(dyi)});
    };
    return work;
}

}  // namespace keel::cpu::kernels
