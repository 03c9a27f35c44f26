#include "memory/event_pool.hpp"

#include "logging.hpp"

namespace keel::memory {

EventPool::~EventPool() {
    for (keel_event event : free_) {
        auto r = ops_.event_destroy(event);
        if (!r.ok()) detail::log_warn("[EventPool] " + r.error().message());
    }
}

Result<keel_event> EventPool::acquire() {
    {
        std::lock_guard lock(mu_);
        if (!free_.empty()) {
            keel_event event = free_.back();
            free_.pop_back();
            return event;
        }
    }
    // Created outside every lock: event creation may be a driver call.
    auto created = ops_.event_create();
    if (!created.ok()) return std::move(created).error().context("EventPool::acquire");
    created_.fetch_add(1, std::memory_order_relaxed);
    return *created;
}

void EventPool::release(keel_event event) noexcept {
    if (event == nullptr) return;
    try {
        std::lock_guard lock(mu_);
        free_.push_back(event);
    } catch (...) {
        // Out of host memory growing the vector: destroy instead of pooling.
        (void)ops_.event_destroy(event);
    }
}

}  // namespace keel::memory
