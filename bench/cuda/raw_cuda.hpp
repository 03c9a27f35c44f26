// The baseline: what a CUDA programmer writes without keel.
#pragma once

#include <cuda_runtime_api.h>

namespace keel::bench {

// empty<<<1, 1, 0, stream>>>(); returns the launch's error.
cudaError_t raw_launch_empty(cudaStream_t stream);

}  // namespace keel::bench
