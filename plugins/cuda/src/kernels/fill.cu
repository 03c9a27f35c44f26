// fill(out: buffer f32, value: scalar f32): out[i] = value.
#include "kernels/launch.cuh"

#include <keel/plugin/basic_kernels.hpp>

namespace keel::cuda {

namespace {

__global__ void fill_f32(float* out, std::uint64_t n, float value) {
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride)
        out[i] = value;
}

Result<void> launch_fill(const LaunchContext& ctx, const plugin::LaunchArgsView& args) {
    KEEL_TRY_ASSIGN(const plugin::FillArgs f, plugin::parse_fill(args));
    KEEL_TRY(plugin::check_buffer(args, 0, "out", f.out, ctx.inside()));
    return launch_kernel<fill_f32>(ctx, grid_for(f.count, ctx), dim3(kBlockSize), device_pointer<float>(f.out),
                         f.count, f.value);
}

}  // namespace

extern const KernelDef kFillKernel{"fill", &launch_fill, false};

}  // namespace keel::cuda
