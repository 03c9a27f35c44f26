// A bounded stack of idle CUDA handles (streams, events) kept for reuse:
// creating one costs microseconds and may synchronise inside the driver,
// handing back a pooled one costs a mutex.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace keel::cuda {

// Thread-safe. Holds raw handles only; whoever takes one owns it, and the
// owner of the pool destroys what is left (take_all) before the pool dies.
template <class Handle>
class HandlePool {
public:
    explicit HandlePool(std::size_t capacity) : capacity_(capacity) {}
    HandlePool(const HandlePool&) = delete;
    HandlePool& operator=(const HandlePool&) = delete;
    HandlePool(HandlePool&&) = delete;
    HandlePool& operator=(HandlePool&&) = delete;
    ~HandlePool() = default;

    // An idle handle, or nothing when the pool is empty.
    [[nodiscard]] std::optional<Handle> take() {
        std::lock_guard lock(mutex_);
        if (idle_.empty()) return std::nullopt;
        Handle h = idle_.back();
        idle_.pop_back();
        return h;
    }

    // Keeps `handle` for reuse. False when the pool is full: the caller
    // still owns it and destroys it.
    [[nodiscard]] bool give(Handle handle) {
        std::lock_guard lock(mutex_);
        if (idle_.size() >= capacity_) return false;
        idle_.push_back(handle);
        return true;
    }

    // Every idle handle, now owned by the caller.
    [[nodiscard]] std::vector<Handle> take_all() {
        std::lock_guard lock(mutex_);
        return std::exchange(idle_, {});
    }

private:
    const std::size_t capacity_;
    std::mutex mutex_;
    std::vector<Handle> idle_;
};

}  // namespace keel::cuda
