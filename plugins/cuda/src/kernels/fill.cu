// fill(out: buffer f32, value: scalar f32): out[i] = value.
#include "kernels/launch.cuh"

namespace keel::cuda {

namespace {

__global__ void fill_f32(float* out, std::uint64_t n, float value) {
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride)
        out[i] = value;
}

constexpr keel_dtype kF32[] = {KEEL_DTYPE_F32};

Result<void> launch_fill(const LaunchContext& ctx, const plugin::LaunchArgsView& args) {
    KEEL_TRY(args.expect_count(2));
    KEEL_TRY_ASSIGN(const plugin::BufferArg out, ctx.buffer(args, 0, "out", kF32));
    KEEL_TRY_ASSIGN(const double value, args.scalar_f64(1, "value"));
    const std::uint64_t n = out.size / sizeof(float);
    return launch_kernel(ctx, fill_f32, grid_for(n, ctx), dim3(kBlockSize), device_pointer<float>(out), n,
                         static_cast<float>(value));
}

}  // namespace

extern const KernelDef kFillKernel{"fill", &launch_fill, false};

}  // namespace keel::cuda
