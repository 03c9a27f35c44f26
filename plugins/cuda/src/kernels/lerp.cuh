// The CUDA lerp and lerp_grad kernels (signatures: docs/kernels.md). Launch
// arguments are parsed and planned by keel::plugin (lerp_args.hpp); these
// enqueue a plan on a CUDA stream. Plain C++ declarations: host code built
// by any compiler may call them.
#pragma once

#include <keel/plugin/lerp_args.hpp>
#include <keel/result.hpp>

#include <cuda_runtime_api.h>

#include "kernel_scratch.hpp"

#include <array>

namespace keel::cuda {

// f16 and bf16 compute and accumulate in f32; f64 in f64.
inline constexpr std::array<keel_dtype, 4> kLerpCudaDtypes = plugin::kLerpDtypes;

// Enqueues out = lerp(x, y, w) on `stream`; buffer addresses are CUDA
// device pointers of the stream's device. Fails (enqueuing nothing) only
// for a launch error reported by CUDA at enqueue time.
[[nodiscard]] Result<void> enqueue_lerp(const plugin::LerpPlan& plan, cudaStream_t stream);

// Enqueues dx / dy of lerp_grad on `stream`. Reductions split over several
// blocks keep their partial sums and arrival counters in `scratch`, the
// stream's (locked here while the kernels are enqueued); sums are
// reproducible run to run (fixed split, fixed combine order: atomics only
// count arrivals, never add values).
[[nodiscard]] Result<void> enqueue_lerp_grad(const plugin::LerpGradPlan& plan, cudaStream_t stream,
                                             KernelScratch& scratch);

}  // namespace keel::cuda
