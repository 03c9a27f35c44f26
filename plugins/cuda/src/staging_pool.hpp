// Pinned staging buffers through which copies to and from pageable host
// memory go (see pageable_copy.hpp). Buffers come in power-of-two sizes
// from 4 KiB to 8 MiB and are reused; a copy holds one through a
// StagingLease until the last stream callback that uses it has run.
#pragma once

#include <keel/result.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace keel::cuda {

class StagingPool;

// One staging buffer lent to one copy. Shared (std::shared_ptr) by the
// stream callbacks of that copy; the last owner gives the buffer back.
// Its destructor makes no CUDA call, so it may run on a CUDA callback thread.
class StagingLease {
public:
    StagingLease(StagingPool& pool, void* buffer, std::size_t size) noexcept
        : pool_(pool), buffer_(buffer), size_(size) {}
    StagingLease(const StagingLease&) = delete;
    StagingLease& operator=(const StagingLease&) = delete;
    StagingLease(StagingLease&&) = delete;
    StagingLease& operator=(StagingLease&&) = delete;
    ~StagingLease();

    [[nodiscard]] unsigned char* data() const noexcept { return static_cast<unsigned char*>(buffer_); }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }

private:
    StagingPool& pool_;
    void* const buffer_;
    const std::size_t size_;
};

// Thread-safe. Owned by a Device; outlives every lease (plugin_shutdown
// runs after every stream was destroyed, hence after every callback).
class StagingPool {
public:
    static constexpr std::size_t kSmallest = 4 * 1024;
    static constexpr std::size_t kLargest = 8 * 1024 * 1024;
    // Pinned bytes the pool may hold (idle and lent). Beyond it, lend()
    // answers nothing and the caller falls back to CUDA's own path.
    static constexpr std::uint64_t kCapacity = 256ull * 1024 * 1024;

    StagingPool() = default;
    StagingPool(const StagingPool&) = delete;
    StagingPool& operator=(const StagingPool&) = delete;
    StagingPool(StagingPool&&) = delete;
    StagingPool& operator=(StagingPool&&) = delete;
    ~StagingPool() = default;  // release_all() first: the destructor makes no CUDA call

    // A buffer of at least min(bytes, kLargest) bytes: an idle one, or a new
    // cudaHostAlloc (the device must be current). Nothing when the pool is at
    // capacity; an error when CUDA fails.
    [[nodiscard]] Result<std::optional<std::shared_ptr<StagingLease>>> lend(std::uint64_t bytes);

    // Frees every idle buffer (plugin_shutdown). Best effort.
    void release_all() noexcept;
    // Whether any buffer was ever allocated and not released.
    [[nodiscard]] bool holds_any() noexcept;

private:
    friend class StagingLease;
    static constexpr std::size_t kClasses = 12;  // 4 KiB << 0 .. 4 KiB << 11 = 8 MiB

    // Back to the idle list; no CUDA call. Called by ~StagingLease.
    void give_back(void* buffer, std::size_t size) noexcept;

    std::mutex mutex_;
    std::array<std::vector<void*>, kClasses> idle_;
    std::uint64_t held_bytes_ = 0;  // idle + lent
};

}  // namespace keel::cuda
