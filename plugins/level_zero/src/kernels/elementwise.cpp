// fill(out: buffer f32, value: scalar f32) and
// axpy(alpha: scalar f32, x: buffer f32, y: buffer f32): y = alpha * x + y.
// SPIR-V: keel_fill_f32 and keel_axpy_f32 in kernels/core.cl.
#include "kernel_registry.hpp"
#include "usm.hpp"

#include <keel/plugin/basic_kernels.hpp>

#include "../../kernels/keel_ze_kernels.h"

#include <array>

namespace keel::level_zero {

namespace {

Result<void> launch_fill(const LaunchContext& ctx, const plugin::LaunchArgsView& args) {
    KEEL_TRY_ASSIGN(const plugin::FillArgs f, plugin::parse_fill(args));
    KEEL_TRY(plugin::check_buffer(args, 0, "out", f.out, ctx.inside()));
    if (f.count == 0) return ok();
    void* out = device_pointer(f.out.addr);
    const auto n = static_cast<keel_i64>(f.count);
    const std::array<KernelArgValue, 3> values{{{sizeof out, &out}, {sizeof n, &n}, {sizeof f.value, &f.value}}};
    return ctx.launch(SpirvModule::core, "keel_fill_f32", f.count, values);
}

Result<void> launch_axpy(const LaunchContext& ctx, const plugin::LaunchArgsView& args) {
    KEEL_TRY_ASSIGN(const plugin::AxpyArgs a, plugin::parse_axpy(args));
    KEEL_TRY(plugin::check_buffer(args, 1, "x", a.x, ctx.inside()));
    KEEL_TRY(plugin::check_buffer(args, 2, "y", a.y, ctx.inside()));
    if (a.count == 0) return ok();
    void* x = device_pointer(a.x.addr);
    void* y = device_pointer(a.y.addr);
    const auto n = static_cast<keel_i64>(a.count);
    const std::array<KernelArgValue, 4> values{
        {{sizeof a.alpha, &a.alpha}, {sizeof x, &x}, {sizeof y, &y}, {sizeof n, &n}}};
    return ctx.launch(SpirvModule::core, "keel_axpy_f32", a.count, values);
}

}  // namespace

extern const KernelDef kFillKernel{"fill", &launch_fill};
extern const KernelDef kAxpyKernel{"axpy", &launch_axpy};

}  // namespace keel::level_zero
