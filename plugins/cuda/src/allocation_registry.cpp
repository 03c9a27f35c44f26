#include "allocation_registry.hpp"

#include <algorithm>
#include <mutex>
#include <utility>

namespace keel::cuda {

namespace {

bool base_less(const std::pair<keel_device_addr, std::uint64_t>& entry, keel_device_addr addr) noexcept {
    return entry.first < addr;
}

}  // namespace

void AllocationRegistry::add(keel_device_addr base, std::uint64_t size) {
    std::unique_lock lock(mutex_);
    auto it = std::lower_bound(live_.begin(), live_.end(), base, base_less);
    if (it != live_.end() && it->first == base) {
        it->second = size;  // CUDA reused an address keel thought live: trust CUDA
        return;
    }
    live_.insert(it, {base, size});
}

Result<void> AllocationRegistry::remove(keel_device_addr base) {
    std::unique_lock lock(mutex_);
    auto it = std::lower_bound(live_.begin(), live_.end(), base, base_less);
    if (it == live_.end() || it->first != base)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     hex_addr(base) + " is not the start of a live " + kind_);
    live_.erase(it);
    return ok();
}

std::vector<std::pair<keel_device_addr, std::uint64_t>>::const_iterator AllocationRegistry::holding(
    keel_device_addr addr) const noexcept {
    // The last allocation starting at or before addr.
    auto it = std::upper_bound(live_.begin(), live_.end(), addr,
                               [](keel_device_addr a, const auto& entry) { return a < entry.first; });
    if (it == live_.begin()) return live_.end();
    --it;
    return addr - it->first < it->second ? it : live_.end();
}

Result<void> AllocationRegistry::check(keel_device_addr addr, std::uint64_t size,
                                       const char* role) const {
    std::shared_lock lock(mutex_);
    auto it = holding(addr);
    if (it == live_.end())
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     std::string(role) + " " + hex_addr(addr) + " is not a " + kind_);
    const std::uint64_t offset = addr - it->first;
    if (size <= it->second - offset) return ok();
    return Error(KEEL_STATUS_OUT_OF_RANGE,
                 std::string(role) + " " + hex_addr(addr) + " + " + std::to_string(size) +
                     " bytes runs past the end of its " + kind_ + " (" + hex_addr(it->first) + ", " +
                     std::to_string(it->second) + " bytes)");
}

bool AllocationRegistry::contains(keel_device_addr addr, std::uint64_t size) const noexcept {
    std::shared_lock lock(mutex_);
    auto it = holding(addr);
    return it != live_.end() && size <= it->second - (addr - it->first);
}

std::vector<std::pair<keel_device_addr, std::uint64_t>> AllocationRegistry::take_all() {
    std::unique_lock lock(mutex_);
    return std::exchange(live_, {});
}

}  // namespace keel::cuda
