#include "inline_copy.hpp"

#include "cuda_error.hpp"
#include "kernel_preload.hpp"

#include <cstring>

namespace keel::cuda {

namespace {

// Passed by value: CUDA copies kernel parameters when the launch is
// enqueued, which is what makes `src` reusable at once.
struct InlineBytes {
    unsigned char bytes[KEEL_INLINE_COPY_MAX];
};

__global__ void inline_copy_kernel(unsigned char* dst, InlineBytes src, unsigned size) {
    for (unsigned i = threadIdx.x; i < size; i += blockDim.x) dst[i] = src.bytes[i];
}

}  // namespace

Result<void> enqueue_inline_copy(cudaStream_t stream, keel_device_addr dst, const void* src,
                                 std::uint32_t size) {
    (void)kPreloaded<&inline_copy_kernel>;  // loaded before the device's first use
    InlineBytes bytes{};
    std::memcpy(bytes.bytes, src, size);
    auto* out = reinterpret_cast<unsigned char*>(static_cast<std::uintptr_t>(dst));
    void* params[] = {&out, &bytes, &size};
    return check_cuda(cudaLaunchKernel(reinterpret_cast<const void*>(&inline_copy_kernel), dim3(1), dim3(64),
                                       params, 0, stream));
}

}  // namespace keel::cuda
