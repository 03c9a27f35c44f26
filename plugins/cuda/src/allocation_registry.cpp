#include "allocation_registry.hpp"

#include <cstdio>
#include <mutex>

namespace keel::cuda {

std::string hex_addr(keel_device_addr addr) {
    char text[2 + 16 + 1];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(addr));
    return text;
}

void AllocationRegistry::add(keel_device_addr base, std::uint64_t size) {
    std::unique_lock lock(mutex_);
    live_[base] = size;
}

Result<void> AllocationRegistry::remove(keel_device_addr base) {
    std::unique_lock lock(mutex_);
    auto it = live_.find(base);
    if (it == live_.end())
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     hex_addr(base) + " is not the start of a live " + kind_);
    live_.erase(it);
    return ok();
}

Result<void> AllocationRegistry::check(keel_device_addr addr, std::uint64_t size,
                                       const char* role) const {
    std::shared_lock lock(mutex_);
    auto it = live_.upper_bound(addr);  // first allocation starting after addr
    if (it != live_.begin()) {
        --it;
        const keel_device_addr base = it->first;
        const std::uint64_t length = it->second;
        const std::uint64_t offset = addr - base;
        if (offset < length) {
            if (size <= length - offset) return ok();
            return Error(KEEL_STATUS_OUT_OF_RANGE,
                         std::string(role) + " " + hex_addr(addr) + " + " + std::to_string(size) +
                             " bytes runs past the end of its " + kind_ + " (" + hex_addr(base) + ", " +
                             std::to_string(length) + " bytes)");
        }
    }
    return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(role) + " " + hex_addr(addr) +
                                                   " is not a " + kind_);
}

bool AllocationRegistry::contains(keel_device_addr addr, std::uint64_t size) const noexcept {
    std::shared_lock lock(mutex_);
    auto it = live_.upper_bound(addr);
    if (it == live_.begin()) return false;
    --it;
    const std::uint64_t offset = addr - it->first;
    return offset < it->second && size <= it->second - offset;
}

std::vector<std::pair<keel_device_addr, std::uint64_t>> AllocationRegistry::take_all() {
    std::unique_lock lock(mutex_);
    std::vector<std::pair<keel_device_addr, std::uint64_t>> all(live_.begin(), live_.end());
    live_.clear();
    return all;
}

}  // namespace keel::cuda
