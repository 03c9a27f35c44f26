// Launch geometry and launch-error reporting shared by the lerp kernels.
#include "lerp_device.cuh"

#include <algorithm>

namespace keel::cuda::lerp {

std::int64_t grid_blocks(std::int64_t work, std::int64_t per_block) {
    int device = 0, sms = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0)
        sms = 132;
    // Enough resident blocks to cover every SM several times; the kernels
    // are grid-stride loops, so more would only add scheduling.
    const std::int64_t cap = static_cast<std::int64_t>(sms) * (2048 / kBlockThreads) * 4;
    return std::clamp<std::int64_t>((work + per_block - 1) / per_block, 1, cap);
}

Result<void> cuda_result(cudaError_t e, const char* where, const char* what) {
    if (e == cudaSuccess) return ok();
    return Error(e == cudaErrorMemoryAllocation ? KEEL_STATUS_OUT_OF_MEMORY : KEEL_STATUS_DEVICE_ERROR,
                 std::string("[") + where + "] " + what + ": " + cudaGetErrorName(e) + ": " +
                     cudaGetErrorString(e));
}

}  // namespace keel::cuda::lerp
