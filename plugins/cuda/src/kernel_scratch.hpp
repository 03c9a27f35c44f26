// Device memory a stream's kernels reuse from launch to launch (the partial
// sums and arrival counters of lerp_grad's split reductions), so a launch
// allocates nothing: a cudaMallocAsync per launch costs host time that the
// GPU waits through, and after each synchronisation the default pool hands
// its memory back to the driver and has to map it again.
#pragma once

#include <keel/result.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <mutex>

namespace keel::cuda {

// One per keel stream. Sync: a launch holds lock() from get() until its
// kernels are enqueued, so no other thread can replace the memory in between.
class KernelScratch {
public:
    KernelScratch() = default;
    KernelScratch(const KernelScratch&) = delete;
    KernelScratch& operator=(const KernelScratch&) = delete;
    KernelScratch(KernelScratch&&) = delete;
    KernelScratch& operator=(KernelScratch&&) = delete;
    ~KernelScratch() = default;  // release() frees the memory, in stream order

    [[nodiscard]] std::unique_lock<std::mutex> lock() { return std::unique_lock(mu_); }

    // At least `bytes` of device memory for work enqueued next on `stream`
    // (the stream of this scratch), every byte zero the first time it is
    // handed out. Work that uses part of it as counters must leave them zero
    // (so the next launch finds them so). Grows in stream order: the old
    // memory is freed after the work already enqueued. The caller holds lock().
    [[nodiscard]] Result<void*> get(cudaStream_t stream, std::size_t bytes);

    // Frees the memory after the work enqueued on `stream` (at stream_destroy).
    void release(cudaStream_t stream) noexcept;

private:
    std::mutex mu_;
    void* memory_ = nullptr;  // guarded by mu_
    std::size_t capacity_ = 0;
};

}  // namespace keel::cuda
