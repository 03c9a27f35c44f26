// axpy(alpha: scalar f32, x: buffer f32, y: buffer f32): y = alpha * x + y,
// x and y of equal size.
#include "kernels/launch.cuh"

namespace keel::cuda {

namespace {

__global__ void axpy_f32(float alpha, const float* x, float* y, std::uint64_t n) {
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride)
        y[i] = alpha * x[i] + y[i];
}

constexpr keel_dtype kF32[] = {KEEL_DTYPE_F32};

Result<void> launch_axpy(const LaunchContext& ctx, const plugin::LaunchArgsView& args) {
    KEEL_TRY(args.expect_count(3));
    KEEL_TRY_ASSIGN(const double alpha, args.scalar_f64(0, "alpha"));
    KEEL_TRY_ASSIGN(const plugin::BufferArg x, ctx.buffer(args, 1, "x", kF32));
    KEEL_TRY_ASSIGN(const plugin::BufferArg y, ctx.buffer(args, 2, "y", kF32));
    if (x.size != y.size)
        return args.invalid("x has " + std::to_string(x.size) + " bytes, y has " + std::to_string(y.size) +
                            ": sizes must be equal");
    const std::uint64_t n = y.size / sizeof(float);
    return launch_kernel(ctx, axpy_f32, grid_for(n, ctx), dim3(kBlockSize), static_cast<float>(alpha),
                         device_pointer<const float>(x), device_pointer<float>(y), n);
}

}  // namespace

extern const KernelDef kAxpyKernel{"axpy", &launch_axpy, false};

}  // namespace keel::cuda
