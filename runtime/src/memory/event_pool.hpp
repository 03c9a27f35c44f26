// Reusable events, so that steady-state operation creates none. Free events
// are kept per thread shard (memory/thread_shard.hpp), so that threads
// recording on their own streams do not share a lock or a cache line; a
// thread whose shard is empty takes half of another's before it creates one.
// The locks only guard vectors: event_create runs outside them, and no
// caller ever holds the allocator's lock while using the pool.
#pragma once

#include "memory/device_ops.hpp"
#include "memory/thread_shard.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace keel::memory {

// Sync: acquire/release from any thread.
class EventPool {
public:
    explicit EventPool(DeviceOps& ops) : ops_(ops) {}
    EventPool(const EventPool&) = delete;
    EventPool& operator=(const EventPool&) = delete;
    EventPool(EventPool&&) = delete;
    EventPool& operator=(EventPool&&) = delete;
    // Destroys every pooled event. Events still out are the caller's bug.
    ~EventPool();

    // A pooled event (of the calling thread's shard, else of another's), or
    // a new one when the pool is empty.
    [[nodiscard]] Result<keel_event> acquire();
    // Gives back, to the calling thread's shard, an event whose last record
    // has completed or that is no longer waited on by the host (device-side
    // waits already enqueued on it stay valid, per the ABI).
    void release(keel_event event) noexcept;

    [[nodiscard]] std::uint64_t created() const noexcept {
        return created_.load(std::memory_order_relaxed);
    }

private:
    struct alignas(64) Shard {
        std::mutex mu;
        std::vector<keel_event> free;  // guarded by mu
    };
    // Moves up to half of another shard's events (at least one) into `own`;
    // false when every other shard is empty.
    bool refill(Shard& own, std::uint32_t own_index);

    DeviceOps& ops_;
    std::array<Shard, kMaxShards> shards_;
    alignas(64) std::atomic<std::uint64_t> created_{0};
};

}  // namespace keel::memory
