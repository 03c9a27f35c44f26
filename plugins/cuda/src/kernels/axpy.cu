// axpy(alpha: scalar f32, x: buffer f32, y: buffer f32): y = alpha * x + y,
// x and y of equal size.
#include "kernels/launch.cuh"

#include <keel/plugin/basic_kernels.hpp>

namespace keel::cuda {

namespace {

__global__ void axpy_f32(float alpha, const float* x, float* y, std::uint64_t n) {
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride)
        y[i] = alpha * x[i] + y[i];
}

Result<void> launch_axpy(const LaunchContext& ctx, const plugin::LaunchArgsView& args) {
    KEEL_TRY_ASSIGN(const plugin::AxpyArgs a, plugin::parse_axpy(args));
    KEEL_TRY(plugin::check_buffer(args, 1, "x", a.x, ctx.inside()));
    KEEL_TRY(plugin::check_buffer(args, 2, "y", a.y, ctx.inside()));
    return launch_kernel<axpy_f32>(ctx, grid_for(a.count, ctx), dim3(kBlockSize), a.alpha,
                         device_pointer<const float>(a.x), device_pointer<float>(a.y), a.count);
}

}  // namespace

extern const KernelDef kAxpyKernel{"axpy", &launch_axpy, false};

}  // namespace keel::cuda
