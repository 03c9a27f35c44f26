// fill(out: buffer f32, value: scalar f32) and
// axpy(alpha: scalar f32, x: buffer f32, y: buffer f32): y = alpha * x + y.
// SPIR-V: keel_fill_f32 and keel_axpy_f32 in kernels/core.cl.
#include "kernel_registry.hpp"
#include "usm.hpp"

#include "../../kernels/keel_ze_kernels.h"

#include <array>

namespace keel::level_zero {

namespace {

constexpr keel_dtype kF32[] = {KEEL_DTYPE_F32};

Result<void> launch_fill(const LaunchContext& ctx, const plugin::LaunchArgsView& args) {
    KEEL_TRY(args.expect_count(2));
    KEEL_TRY_ASSIGN(const plugin::BufferArg out, ctx.buffer(args, 0, "out", kF32));
    KEEL_TRY_ASSIGN(const double value, args.scalar_f64(1, "value"));
    const keel_i64 n = static_cast<keel_i64>(out.size / sizeof(float));
    if (n == 0) return ok();
    void* out_ptr = device_pointer(out.addr);
    const float v = static_cast<float>(value);
    const std::array<KernelArgValue, 3> values{{{sizeof out_ptr, &out_ptr}, {sizeof n, &n}, {sizeof v, &v}}};
    return ctx.launch(SpirvModule::core, "keel_fill_f32", static_cast<std::uint64_t>(n), values);
}

Result<void> launch_axpy(const LaunchContext& ctx, const plugin::LaunchArgsView& args) {
    KEEL_TRY(args.expect_count(3));
    KEEL_TRY_ASSIGN(const double alpha, args.scalar_f64(0, "alpha"));
    KEEL_TRY_ASSIGN(const plugin::BufferArg x, ctx.buffer(args, 1, "x", kF32));
    KEEL_TRY_ASSIGN(const plugin::BufferArg y, ctx.buffer(args, 2, "y", kF32));
    if (x.size != y.size)
        return args.invalid("x has " + std::to_string(x.size) + " bytes, y has " + std::to_string(y.size) +
                            ": sizes must be equal");
    const keel_i64 n = static_cast<keel_i64>(y.size / sizeof(float));
    if (n == 0) return ok();
    const float a = static_cast<float>(alpha);
    void* x_ptr = device_pointer(x.addr);
    void* y_ptr = device_pointer(y.addr);
    const std::array<KernelArgValue, 4> values{
        {{sizeof a, &a}, {sizeof x_ptr, &x_ptr}, {sizeof y_ptr, &y_ptr}, {sizeof n, &n}}};
    return ctx.launch(SpirvModule::core, "keel_axpy_f32", static_cast<std::uint64_t>(n), values);
}

}  // namespace

extern const KernelDef kFillKernel{"fill", &launch_fill};
extern const KernelDef kAxpyKernel{"axpy", &launch_axpy};

}  // namespace keel::level_zero
