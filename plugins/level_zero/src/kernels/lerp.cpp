// The `lerp` and `lerp_grad` table entries (signatures: docs/kernels.md).
// Arguments are parsed and planned by plugins/support (the same validation
// as every plugin), every buffer is checked to lie in a device allocation of
// the stream's device, then each planned pass becomes one launch of
// keel_lerp_<dtype> or keel_lerp_grad_<dtype> (kernels/lerp.clh): f32, f16
// and bf16 in the core module, f64 in the fp64 module where the device has
// fp64.
#include "kernel_registry.hpp"
#include "transfers.hpp"
#include "usm.hpp"

#include "../../kernels/keel_ze_kernels.h"

#include <keel/plugin/lerp_args.hpp>

#include <array>
#include <span>
#include <utility>
#include <vector>

namespace keel::level_zero {

namespace {

using plugin::GradOutput;

// The SPIR-V kernels of one dtype.
struct Variant {
    const char* lerp;
    const char* grad;
    SpirvModule module;
    bool f64;  // computes in double (else in float)
};

Variant variant_for(keel_dtype dtype) {
    switch (dtype) {
        case KEEL_DTYPE_F16: return {"keel_lerp_f16", "keel_lerp_grad_f16", SpirvModule::core, false};
        case KEEL_DTYPE_BF16: return {"keel_lerp_bf16", "keel_lerp_grad_bf16", SpirvModule::core, false};
        case KEEL_DTYPE_F64: return {"keel_lerp_f64", "keel_lerp_grad_f64", SpirvModule::fp64, true};
        default: return {"keel_lerp_f32", "keel_lerp_grad_f32", SpirvModule::core, false};
    }
}

// The dtypes this device runs: fp64 only where the device has it.
std::span<const keel_dtype> implemented(const Device& device) {
    static constexpr std::array<keel_dtype, 4> kAll{KEEL_DTYPE_F16, KEEL_DTYPE_BF16, KEEL_DTYPE_F32, KEEL_DTYPE_F64};
    return device.limits().fp64 ? std::span<const keel_dtype>(kAll) : std::span<const keel_dtype>(kAll).first(3);
}

// The scalar weight in the kernel's compute type.
struct ScalarArg {
    float f32 = 0;
    double f64 = 0;
    ScalarArg(double value, bool as_f64) : f32(static_cast<float>(value)), f64(value), f64_(as_f64) {}
    [[nodiscard]] KernelArgValue arg() const noexcept {
        return f64_ ? KernelArgValue{sizeof f64, &f64} : KernelArgValue{sizeof f32, &f32};
    }

private:
    bool f64_;
};

template <class Layout, int Operands>
void copy_layout(const plugin::StridedLayout& from, Layout& to) {
    to = Layout{};
    to.rank = from.rank;
    to.numel = from.numel;
    for (int d = 0; d < from.rank; ++d) {
        to.size[d] = from.size[d];
        for (int op = 0; op < Operands; ++op) to.stride[op][d] = from.stride[op][d];
    }
}

Result<void> launch_lerp(const LaunchContext& ctx, const plugin::LaunchArgsView& args) {
    KEEL_TRY_ASSIGN(const plugin::LerpPlan plan, plugin::plan_lerp(args, implemented(ctx.device())));
    KEEL_TRY(plugin::check_buffers(args, plugin::kLerpBuffers, ctx.inside()));
    if (plan.layout.numel == 0) return ok();
    const Variant v = variant_for(plan.dtype);
    KeelZeLerpLayout layout;
    copy_layout<KeelZeLerpLayout, 4>(plan.layout, layout);
    void* out = device_pointer(plan.out.addr);
    void* x = device_pointer(plan.x.addr);
    void* y = device_pointer(plan.y.addr);
    void* w = plan.w.is_scalar ? x : device_pointer(plan.w.buffer.addr);  // never read when scalar
    const ScalarArg w_value(plan.w.value, v.f64);
    const keel_i64 w_is_scalar = plan.w.is_scalar ? 1 : 0;
    const std::array<KernelArgValue, 7> values{{{sizeof out, &out},
                                                {sizeof x, &x},
                                                {sizeof y, &y},
                                                {sizeof w, &w},
                                                w_value.arg(),
                                                {sizeof w_is_scalar, &w_is_scalar},
                                                {sizeof layout, &layout}}};
    return ctx.launch(v.module, v.lerp, static_cast<std::uint64_t>(plan.layout.numel), values);
}

keel_i64 mode_bits(GradOutput g) {
    switch (g) {
        case GradOutput::elementwise: return KEEL_ZE_GRAD_ELEMENTWISE;
        case GradOutput::reduced: return KEEL_ZE_GRAD_REDUCED;
        default: return KEEL_ZE_GRAD_ABSENT;
    }
}

// One planned pass in the kernel's terms (keel_ze_kernels.h).
KeelZeGradPass pass_layout(const plugin::LerpGradPass& pass) {
    KeelZeGradPass out{};
    if (pass.reduces()) {
        const plugin::ReductionLayout& r = pass.reduction;
        copy_layout<KeelZeGradLayout, 3>(r.outer, out.outer);
        copy_layout<KeelZeGradLayout, 3>(r.reduce, out.reduce);
        out.inner = r.inner;
        for (int op = 0; op < 3; ++op) out.inner_stride[op] = r.inner_stride[op];
        out.inner_reduced = r.inner_reduced ? 1 : 0;
    } else {
        // Every element is its own target: no reduced dims, inner of 1.
        copy_layout<KeelZeGradLayout, 3>(pass.layout, out.outer);
        out.reduce.numel = 1;
        out.inner = 1;
    }
    return out;
}

Result<void> launch_lerp_grad(const LaunchContext& ctx, const plugin::LaunchArgsView& args) {
    KEEL_TRY_ASSIGN(const plugin::LerpGradPlan plan, plugin::plan_lerp_grad(args, implemented(ctx.device())));
    KEEL_TRY(plugin::check_buffers(args, plugin::kLerpGradBuffers, ctx.inside()));
    if (plan.numel == 0) {
        // Sums over nothing: present gradients are zeros (0x00 bytes in every float dtype).
        for (const plugin::BufferArg& g : {plan.dx, plan.dy})
            if (!g.absent() && g.size != 0) KEEL_TRY(enqueue_fill(ctx.stream, device_pointer(g.addr), 0, g.size));
        return ok();
    }
    const Variant v = variant_for(plan.dtype);
    void* dout = device_pointer(plan.dout.addr);
    void* w = plan.w.is_scalar ? dout : device_pointer(plan.w.buffer.addr);  // never read when scalar
    void* dx = plan.dx.absent() ? dout : device_pointer(plan.dx.addr);       // never touched when absent
    void* dy = plan.dy.absent() ? dout : device_pointer(plan.dy.addr);
    const ScalarArg w_value(plan.w.value, v.f64);
    for (int p = 0; p < plan.pass_count; ++p) {
        const plugin::LerpGradPass& pass = plan.passes[p];
        const KeelZeGradPass layout = pass_layout(pass);
        const keel_i64 modes = (mode_bits(pass.dx) << KEEL_ZE_GRAD_DX_SHIFT) |
                               (mode_bits(pass.dy) << KEEL_ZE_GRAD_DY_SHIFT) |
                               (plan.w.is_scalar ? KEEL_ZE_GRAD_W_SCALAR : 0);
        const keel_i64 targets = layout.outer.numel * (layout.inner_reduced ? 1 : layout.inner);
        const std::array<KernelArgValue, 7> values{{{sizeof dout, &dout},
                                                    {sizeof w, &w},
                                                    {sizeof dx, &dx},
                                                    {sizeof dy, &dy},
                                                    w_value.arg(),
                                                    {sizeof modes, &modes},
                                                    {sizeof layout, &layout}}};
        KEEL_TRY(ctx.launch(v.module, v.grad, static_cast<std::uint64_t>(targets), values));
    }
    return ok();
}

}  // namespace

extern const KernelDef kLerpKernel{"lerp", &launch_lerp};
extern const KernelDef kLerpGradKernel{"lerp_grad", &launch_lerp_grad};

}  // namespace keel::level_zero
