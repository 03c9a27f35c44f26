// The CUDA lerp and lerp_grad kernels (signatures: docs/kernels.md). Launch
// arguments are parsed and planned by keel::plugin (lerp_args.hpp); these
// enqueue a plan on a CUDA stream. Plain C++ declarations: host code built
// by any compiler may call them.
#pragma once

#include <keel/plugin/lerp_args.hpp>
#include <keel/result.hpp>

#include <cuda_runtime_api.h>

#include <array>

namespace keel::cuda {

// f16 and bf16 compute and accumulate in f32; f64 in f64.
inline constexpr std::array<keel_dtype, 4> kLerpCudaDtypes = plugin::kLerpDtypes;

// Enqueues out = lerp(x, y, w) on `stream`; buffer addresses are CUDA
// device pointers of the stream's device. Fails (enqueuing nothing) only
// for a launch error reported by CUDA at enqueue time.
[[nodiscard]] Result<void> enqueue_lerp(const plugin::LerpPlan& plan, cudaStream_t stream);

// Enqueues dx / dy of lerp_grad on `stream`. Reductions that need partial
// sums take a stream-ordered temporary (cudaMallocAsync), freed on the
// stream after use; sums are reproducible run to run (fixed split, fixed
// combine order, no atomics).
[[nodiscard]] Result<void> enqueue_lerp_grad(const plugin::LerpGradPlan& plan, cudaStream_t stream);

}  // namespace keel::cuda
