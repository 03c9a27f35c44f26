// Pinned host blocks the generic path stages device memory through, reused
// by exact size (a training loop sends the same sizes every step, so steady
// state allocates nothing).
//
// Why this is a cache of its own rather than the runtime's staging blocks
// (runtime/src/memory/staging_pool.*, keel::staging::PinnedBlocks):
//   - a block here is an operation's host copy of its data for the whole
//     operation, not one copy's bounce buffer: the input copy writes it, Gloo
//     reads and writes it on the gate's host thread, the output copy reads
//     it. It comes back when the operation's hold is released (the op owns
//     its leases), where the runtime's blocks come back when the event after
//     their one copy completes;
//   - it must be a PinnedBuffer, so that the staging copies are the
//     runtime's own Stream::copy between a view and pinned memory (its
//     checks and its record of the block's use, staged_copy.hpp); the
//     runtime's cache lends raw blocks only inside the runtime, and no public
//     API lends them as PinnedBuffer;
//   - an operation's block is as large as its buffer (a whole gradient
//     bucket), kept by exact size; the runtime's cache lends power-of-two
//     blocks of at most one chunk (StagingConfig::chunk_bytes).
// What is shared is the configuration: how much idle memory it keeps is the
// device's StagingConfig::comm_cached_bytes (MemoryPool::shared(device)'s
// config, the environment applied), as every staging path reads it.
#pragma once

#include <keel/pinned_buffer.hpp>
#include <keel/result.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
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
    // A block of exactly `size` > 0 bytes. The first call reads the device's
    // StagingConfig (an error when its settings do not parse).
    [[nodiscard]] Result<StagingLease> acquire(std::uint64_t size);
    void give_back(PinnedBuffer buffer) noexcept;

private:
    Device device_;
    std::mutex mutex_;
    // Idle bytes kept; a block coming back beyond this is freed. Set by the
    // first acquire(); guarded by mutex_.
    std::optional<std::uint64_t> keep_bytes_;
    std::uint64_t idle_bytes_ = 0;  // guarded by mutex_
    std::map<std::uint64_t, std::vector<PinnedBuffer>> idle_;  // guarded by mutex_
};

}  // namespace keel::comm
