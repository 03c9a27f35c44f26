// Launch geometry and launch-error reporting shared by the lerp kernels.
#include "lerp_device.cuh"

#include <algorithm>
#include <array>
#include <atomic>

namespace keel::cuda::lerp {

namespace {

// SMs of the current device, asked of CUDA once per device: an attribute
// query on every launch is host time the GPU may be waiting through.
int current_sm_count() {
    constexpr int kDevices = 64;
    static std::array<std::atomic<int>, kDevices> known{};
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return 132;
    if (device >= 0 && device < kDevices) {
        if (const int sms = known[device].load(std::memory_order_relaxed); sms > 0) return sms;
    }
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0) return 132;
    if (device >= 0 && device < kDevices) known[device].store(sms, std::memory_order_relaxed);
    return sms;
}

}  // namespace

std::int64_t grid_blocks(std::int64_t work, std::int64_t per_block) {
    const int sms = current_sm_count();
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
