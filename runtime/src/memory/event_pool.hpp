// Reusable events, so that steady-state operation creates none. The pool's
// own lock only guards a vector: event_create runs outside it, and no caller
// ever holds the allocator's lock while using the pool.
#pragma once

#include "memory/device_ops.hpp"

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

    // A pooled event, or a new one when the pool is empty.
    [[nodiscard]] Result<keel_event> acquire();
    // Gives back an event whose last record has completed or that is no
    // longer waited on by the host (device-side waits already enqueued on it
    // stay valid, per the ABI).
    void release(keel_event event) noexcept;

    [[nodiscard]] std::uint64_t created() const noexcept {
        return created_.load(std::memory_order_relaxed);
    }

private:
    DeviceOps& ops_;
    std::mutex mu_;
    std::vector<keel_event> free_;
    std::atomic<std::uint64_t> created_{0};
};

}  // namespace keel::memory
