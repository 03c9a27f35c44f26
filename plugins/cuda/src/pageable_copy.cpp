#include "pageable_copy.hpp"

#include "cuda_error.hpp"

#include <memory>
#include <string>

namespace keel::cuda {

namespace {

class CudaPinnedMemory final : public staging::PinnedMemory {
public:
    Result<void*> allocate(std::size_t bytes) override {
        void* block = nullptr;
        KEEL_TRY(check_cuda(cudaHostAlloc(&block, bytes, cudaHostAllocPortable)));
        return block;
    }
    void free(void* block) noexcept override { (void)cudaFreeHost(block); }
};

void CUDART_CB run_step(cudaStream_t, cudaError_t status, void* data) {
    std::unique_ptr<staging::StagingStream::Step> step(static_cast<staging::StagingStream::Step*>(data));
    (*step)(status == cudaSuccess);
}

// One pageable copy's view of a CUDA stream.
class CudaStagingStream final : public staging::StagingStream {
public:
    CudaStagingStream(cudaStream_t stream, unsigned char* device, cudaMemcpyKind kind) noexcept
        : stream_(stream), device_(device), kind_(kind) {}

    Result<void> enqueue_host_step(Step step) override {
        auto owned = std::make_unique<Step>(std::move(step));
        KEEL_TRY(check_cuda(cudaStreamAddCallback(stream_, &run_step, owned.get(), 0)));
        (void)owned.release();  // run_step owns it now
        return ok();
    }
    Result<void> enqueue_device_copy(std::uint64_t offset, void* block, std::size_t bytes) override {
        if (kind_ == cudaMemcpyHostToDevice)
            return check_cuda(cudaMemcpyAsync(device_ + offset, block, bytes, kind_, stream_));
        return check_cuda(cudaMemcpyAsync(block, device_ + offset, bytes, kind_, stream_));
    }

private:
    cudaStream_t stream_;
    unsigned char* device_;
    cudaMemcpyKind kind_;
};

}  // namespace

std::unique_ptr<staging::PinnedMemory> cuda_pinned_memory() { return std::make_unique<CudaPinnedMemory>(); }

bool is_dma_capable(Device& device, const void* ptr, std::uint64_t size) noexcept {
    if (device.pinned().contains(reinterpret_cast<std::uintptr_t>(ptr), size)) return true;
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) return false;
    return attributes.type != cudaMemoryTypeUnregistered;
}

Result<void> enqueue_pageable_h2d(Device& device, cudaStream_t stream, void* dst, const void* src,
                                  std::uint64_t size) {
    CudaStagingStream port(stream, static_cast<unsigned char*>(dst), cudaMemcpyHostToDevice);
    staging::PageableStaging& staging = device.pageable_staging();
    return staging.to_device(port, src, size);
}

Result<void> enqueue_pageable_d2h(Device& device, cudaStream_t stream, void* dst, const void* src,
                                  std::uint64_t size) {
    CudaStagingStream port(stream, static_cast<unsigned char*>(const_cast<void*>(src)), cudaMemcpyDeviceToHost);
    staging::PageableStaging& staging = device.pageable_staging();
    return staging.to_host(port, dst, size);
}

}  // namespace keel::cuda
