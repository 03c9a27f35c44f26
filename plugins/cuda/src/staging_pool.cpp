#include "staging_pool.hpp"

#include "cuda_error.hpp"

#include <cuda_runtime_api.h>

namespace keel::cuda {

namespace {

std::size_t class_of(std::size_t size) noexcept {
    std::size_t k = 0;
    while ((StagingPool::kSmallest << k) < size) ++k;
    return k;
}

}  // namespace

StagingLease::~StagingLease() { pool_.give_back(buffer_, size_); }

Result<std::optional<std::shared_ptr<StagingLease>>> StagingPool::lend(std::uint64_t bytes) {
    const std::size_t wanted = bytes < kLargest ? static_cast<std::size_t>(bytes) : kLargest;
    const std::size_t k = class_of(wanted);
    const std::size_t size = kSmallest << k;
    void* buffer = nullptr;
    {
        std::lock_guard lock(mutex_);
        if (!idle_[k].empty()) {
            buffer = idle_[k].back();
            idle_[k].pop_back();
        } else {
            if (held_bytes_ + size > kCapacity) return std::optional<std::shared_ptr<StagingLease>>();
            held_bytes_ += size;  // reserved before the (slow) allocation, outside the lock
        }
    }
    if (buffer == nullptr) {
        const cudaError_t allocated = cudaHostAlloc(&buffer, size, cudaHostAllocPortable);
        if (allocated != cudaSuccess) {
            std::lock_guard lock(mutex_);
            held_bytes_ -= size;
            return cuda_error(allocated, "pinned staging buffer of " + std::to_string(size) + " bytes");
        }
    }
    return std::optional<std::shared_ptr<StagingLease>>(std::make_shared<StagingLease>(*this, buffer, size));
}

void StagingPool::give_back(void* buffer, std::size_t size) noexcept {
    std::lock_guard lock(mutex_);
    try {
        idle_[class_of(size)].push_back(buffer);
    } catch (...) {
        // Out of host memory: the buffer stays pinned until process exit
        // (no CUDA call is allowed here to free it).
    }
}

bool StagingPool::holds_any() noexcept {
    std::lock_guard lock(mutex_);
    return held_bytes_ > 0;
}

void StagingPool::release_all() noexcept {
    std::lock_guard lock(mutex_);
    for (auto& buffers : idle_) {
        for (void* b : buffers) (void)cudaFreeHost(b);
        buffers.clear();
    }
    held_bytes_ = 0;
}

}  // namespace keel::cuda
