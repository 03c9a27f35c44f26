// Internal to the CUDA lerp_grad kernels: the pointers of one launch and
// the reduction pass (lerp_grad_reduce.cu), instantiated for each dtype.
#pragma once

#include "lerp_device.cuh"

#include <keel/plugin/lerp_args.hpp>

#include "kernel_scratch.hpp"

namespace keel::cuda::lerp {

template <class T>
struct GradPointers {
    const T* dout;
    const T* w;  // null for a scalar weight
    Compute<T> w_value;
    T* dx;  // null when absent
    T* dy;
};

// One pass that reduces dx and/or dy (LerpGradPass::reduces()); partial
// sums of a split reduction go to `scratch`, the stream's.
template <class T>
Result<void> enqueue_grad_reduction(const GradPointers<T>& q, const plugin::LerpGradPass& pass,
                                    cudaStream_t stream, KernelScratch& scratch);

}  // namespace keel::cuda::lerp
