#include "kernel_scratch.hpp"

#include "cuda_error.hpp"

#include <algorithm>

namespace keel::cuda {

Result<void*> KernelScratch::get(cudaStream_t stream, std::size_t bytes) {
    if (bytes <= capacity_) return memory_;
    // Doubling keeps growth rare for callers whose needs creep up.
    const std::size_t grown = std::max<std::size_t>({bytes, 2 * capacity_, 64 * 1024});
    void* fresh = nullptr;
    KEEL_TRY(check_cuda(cudaMallocAsync(&fresh, grown, stream), "allocating kernel scratch"));
    const cudaError_t zeroed = cudaMemsetAsync(fresh, 0, grown, stream);
    if (zeroed != cudaSuccess) {
        (void)cudaFreeAsync(fresh, stream);
        return cuda_error(zeroed, "zeroing kernel scratch");
    }
    if (memory_ != nullptr) (void)cudaFreeAsync(memory_, stream);
    memory_ = fresh;
    capacity_ = grown;
    return memory_;
}

void KernelScratch::release(cudaStream_t stream) noexcept {
    std::lock_guard lock(mu_);
    if (memory_ != nullptr) (void)cudaFreeAsync(memory_, stream);
    memory_ = nullptr;
    capacity_ = 0;
}

}  // namespace keel::cuda
