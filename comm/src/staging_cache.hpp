// Pinned host blocks the generic path stages device memory through, reused
// by exact size (a training loop sends the same sizes every step, so steady
// state allocates nothing).
#pragma once

#include <keel/pinned_buffer.hpp>
#include <keel/result.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace keel::comm {

class StagingCache;

// One block lent by the cache; back to it when dropped. Move-only, Send.
class StagingLease {
public:
    StagingLease() = default;
    StagingLease(std::shared_ptr<StagingCache> cache, PinnedBuffer buffer) noexcept
        : cache_(std::move(cache)), buffer_(std::move(buffer)) {}
    StagingLease(StagingLease&&) noexcept = default;
    StagingLease& operator=(StagingLease&&) noexcept = default;
    StagingLease(const StagingLease&) = delete;
    StagingLease& operator=(const StagingLease&) = delete;
    ~StagingLease();

    [[nodiscard]] PinnedBuffer& buffer() noexcept { return buffer_; }
    [[nodiscard]] std::byte* data() noexcept { return static_cast<std::byte*>(buffer_.data()); }

private:
    std::shared_ptr<StagingCache> cache_;
    PinnedBuffer buffer_;
};

// Sync: lends and takes back from any thread.
class StagingCache : public std::enable_shared_from_this<StagingCache> {
public:
    explicit StagingCache(Device device) : device_(std::move(device)) {}
    // A block of exactly `size` > 0 bytes.
    [[nodiscard]] Result<StagingLease> acquire(std::uint64_t size);
    void give_back(PinnedBuffer buffer) noexcept;

private:
    // Idle bytes kept; a block coming back beyond this is freed. Enough for
    // a queue of operations in flight on large buffers (a pinned allocation
    // costs far more than the copy it serves).
    static constexpr std::uint64_t kKeepBytes = std::uint64_t{1} << 30;
    std::uint64_t idle_bytes_ = 0;
    Device device_;
    std::mutex mutex_;
    std::map<std::uint64_t, std::vector<PinnedBuffer>> idle_;
};

}  // namespace keel::comm
