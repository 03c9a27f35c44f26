#include "memory/event_pool.hpp"

#include "logging.hpp"

#include <algorithm>

namespace keel::memory {

EventPool::~EventPool() {
    for (Shard& shard : shards_)
        for (keel_event event : shard.free) {
            auto r = ops_.event_destroy(event);
            if (!r.ok()) detail::log_warn("[EventPool] " + r.error().message());
        }
}

bool EventPool::refill(Shard& own, std::uint32_t own_index) {
    // Taken out under the other shard's lock only (never two locks at once),
    // a bounded batch, so that the next acquires find them in their own shard.
    constexpr std::size_t kBatch = 32;
    std::array<keel_event, kBatch> taken{};
    std::size_t n = 0;
    const std::uint32_t count = shard_count();
    for (std::uint32_t k = 1; k < count && n == 0; ++k) {
        Shard& other = shards_[(own_index + k) % count];
        std::lock_guard lock(other.mu);
        n = std::min(kBatch, (other.free.size() + 1) / 2);
        for (std::size_t i = 0; i < n; ++i) {
            taken[i] = other.free.back();
            other.free.pop_back();
        }
    }
    if (n == 0) return false;
    std::lock_guard lock(own.mu);
    for (std::size_t i = 0; i < n; ++i) {
        try {
            own.free.push_back(taken[i]);
        } catch (...) {
            (void)ops_.event_destroy(taken[i]);  // out of host memory: not pooled
        }
    }
    return true;
}

Result<keel_event> EventPool::acquire() {
    const std::uint32_t index = thread_shard();
    Shard& own = shards_[index];
    for (int attempt = 0; attempt < 2; ++attempt) {
        {
            std::lock_guard lock(own.mu);
            if (!own.free.empty()) {
                keel_event event = own.free.back();
                own.free.pop_back();
                return event;
            }
        }
        if (attempt == 0 && !refill(own, index)) break;
    }
    // Created outside every lock: event creation may be a driver call.
    auto created = ops_.event_create();
    if (!created.ok()) return std::move(created).error().context("EventPool::acquire");
    created_.fetch_add(1, std::memory_order_relaxed);
    return *created;
}

void EventPool::release(keel_event event) noexcept {
    if (event == nullptr) return;
    Shard& own = shards_[thread_shard()];
    try {
        std::lock_guard lock(own.mu);
        own.free.push_back(event);
    } catch (...) {
        // Out of host memory growing the vector: destroy instead of pooling.
        (void)ops_.event_destroy(event);
    }
}

}  // namespace keel::memory
