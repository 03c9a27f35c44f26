#include "pageable_copy.hpp"

#include "cuda_error.hpp"
#include "staging_pool.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

namespace keel::cuda {

namespace {

// One host-side step of a staged copy, run by a stream callback: a memcpy
// between the staging buffer and the caller's memory (skipped when the
// stream failed earlier, or when `bytes` is 0: a release-only step). The
// lease keeps the staging buffer lent until the step has run.
// The memcpy is split among the device's host copy threads: one thread of
// memcpy from pageable memory is far slower than the link.
struct HostStep {
    std::shared_ptr<StagingLease> lease;
    staging::CopyPool* copier;
    void* to;
    const void* from;
    std::size_t bytes;
};

void CUDART_CB run_host_step(cudaStream_t, cudaError_t status, void* data) {
    std::unique_ptr<HostStep> step(static_cast<HostStep*>(data));
    if (status == cudaSuccess && step->bytes > 0) step->copier->copy(step->to, step->from, step->bytes);
}

// cudaStreamAddCallback runs every accepted callback exactly once, even after
// a device error, so the lease is always released.
Result<void> enqueue_host_step(cudaStream_t stream, HostStep step) {
    auto owned = std::make_unique<HostStep>(std::move(step));
    KEEL_TRY(check_cuda(cudaStreamAddCallback(stream, &run_host_step, owned.get(), 0)));
    (void)owned.release();  // run_host_step owns it now
    return ok();
}

}  // namespace

bool is_dma_capable(Device& device, const void* ptr, std::uint64_t size) noexcept {
    if (device.pinned().contains(reinterpret_cast<std::uintptr_t>(ptr), size)) return true;
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) return false;
    return attributes.type != cudaMemoryTypeUnregistered;
}

Result<void> enqueue_pageable_h2d(Device& device, cudaStream_t stream, void* dst, const void* src,
                                  std::uint64_t size) {
    KEEL_TRY_ASSIGN(auto lent, device.staging().lend(size));
    if (!lent) return check_cuda(cudaMemcpyAsync(dst, src, size, cudaMemcpyHostToDevice, stream));
    std::shared_ptr<StagingLease> lease = std::move(*lent);
    staging::CopyPool& copier = device.host_copier();
    const auto* from = static_cast<const unsigned char*>(src);
    auto* to = static_cast<unsigned char*>(dst);
    for (std::uint64_t offset = 0; offset < size; offset += lease->size()) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(lease->size(), size - offset));
        // The stream runs the callback, then the transfer: one buffer is
        // enough, since a later chunk's callback waits for this transfer.
        KEEL_TRY(enqueue_host_step(stream, HostStep{lease, &copier, lease->data(), from + offset, n}));
        KEEL_TRY(check_cuda(cudaMemcpyAsync(to + offset, lease->data(), n, cudaMemcpyHostToDevice, stream)));
    }
    // The last transfer reads the buffer after the last callback ran: keep
    // it lent until that transfer is done.
    return enqueue_host_step(stream, HostStep{std::move(lease), &copier, nullptr, nullptr, 0});
}

Result<void> enqueue_pageable_d2h(Device& device, cudaStream_t stream, void* dst, const void* src,
                                  std::uint64_t size) {
    KEEL_TRY_ASSIGN(auto lent, device.staging().lend(size));
    if (!lent) return check_cuda(cudaMemcpyAsync(dst, src, size, cudaMemcpyDeviceToHost, stream));
    std::shared_ptr<StagingLease> lease = std::move(*lent);
    staging::CopyPool& copier = device.host_copier();
    const auto* from = static_cast<const unsigned char*>(src);
    auto* to = static_cast<unsigned char*>(dst);
    for (std::uint64_t offset = 0; offset < size; offset += lease->size()) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(lease->size(), size - offset));
        KEEL_TRY(check_cuda(cudaMemcpyAsync(lease->data(), from + offset, n, cudaMemcpyDeviceToHost, stream)));
        // The last callback is also the buffer's last use: it releases it.
        KEEL_TRY(enqueue_host_step(stream, HostStep{lease, &copier, to + offset, lease->data(), n}));
    }
    return ok();
}

}  // namespace keel::cuda
