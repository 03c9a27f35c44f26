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

// When every staging block is lent to copies in flight the copy fails
// rather than going to cudaMemcpyAsync with pageable memory, which would
// break keel.h's promises: CUDA documents that such a copy "might be
// synchronous" (to the host it returns only once the copy completed; from
// the host the driver "may synchronize with the stream" and reads the source
// at enqueue), so it could wait behind a held stream (a deadlock) or copy
// bytes that a host function earlier on the stream had yet to write. The
// Level Zero plugin answers the same way.
Result<void> staged(Result<bool> enqueued, std::uint64_t size, const staging::PageableStaging& staging) {
    KEEL_TRY_ASSIGN(const bool done, std::move(enqueued));
    if (done) return ok();
    return Error(KEEL_STATUS_OUT_OF_MEMORY,
                 "copy of " + std::to_string(size) + " bytes of pageable memory: the " +
                     std::to_string(staging.config().capacity >> 20) +
                     " MiB of staging memory are all in use by copies in flight "
                     "(KEEL_PAGEABLE_STAGING_MIB raises the limit)");
}

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
    return staged(staging.to_device(port, src, size), size, staging);
}

Result<void> enqueue_pageable_d2h(Device& device, cudaStream_t stream, void* dst, const void* src,
                                  std::uint64_t size) {
    CudaStagingStream port(stream, static_cast<unsigned char*>(const_cast<void*>(src)), cudaMemcpyDeviceToHost);
    staging::PageableStaging& staging = device.pageable_staging();
    return staged(staging.to_host(port, dst, size), size, staging);
}

}  // namespace keel::cuda
