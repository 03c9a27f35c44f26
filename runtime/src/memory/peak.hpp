// High-water marks kept by the memory machinery's statistics.
#pragma once

#include <atomic>
#include <cstdint>

namespace keel::memory {

// Raises `peak` to `value` if it is higher (lock-free; relaxed, since a
// statistic orders nothing).
inline void update_peak(std::atomic<std::uint64_t>& peak, std::uint64_t value) noexcept {
    std::uint64_t seen = peak.load(std::memory_order_relaxed);
    while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
    }
}

}  // namespace keel::memory
