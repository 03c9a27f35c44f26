#include "allocation_registry.hpp"

#include <algorithm>
#include <array>
#include <mutex>
#include <utility>

namespace keel::cuda {

namespace {

std::atomic<std::uint64_t> g_next_registry_id{1};

// A thread's last allocations found, in any registry (device memory and
// pinned memory of each device): an enqueue checks one or two buffers, and
// programs reuse a working set of buffers, so a handful of entries hit.
struct Hit {
    std::uint64_t registry = 0;  // AllocationRegistry::id_, 0 = empty
    std::uint64_t generation = 0;
    keel_device_addr base = 0;
    std::uint64_t size = 0;
};
constexpr std::size_t kHits = 8;
thread_local std::array<Hit, kHits> t_hits{};
thread_local std::size_t t_next_hit = 0;

bool base_less(const std::pair<keel_device_addr, std::uint64_t>& entry, keel_device_addr addr) noexcept {
    return entry.first < addr;
}

}  // namespace

AllocationRegistry::AllocationRegistry(std::string kind)
    : kind_(std::move(kind)), id_(g_next_registry_id.fetch_add(1, std::memory_order_relaxed)) {}

bool AllocationRegistry::cached(keel_device_addr addr, std::uint64_t size) const noexcept {
    const std::uint64_t generation = generation_.load(std::memory_order_acquire);
    for (const Hit& h : t_hits)
        if (h.registry == id_ && h.generation == generation && addr >= h.base && addr - h.base < h.size &&
            size <= h.size - (addr - h.base))
            return true;
    return false;
}

void AllocationRegistry::remember(keel_device_addr base, std::uint64_t size) const noexcept {
    // Called under the shared lock that found the allocation: no removal
    // (which takes the lock exclusively) can come between that lookup and
    // this read of the generation.
    t_hits[t_next_hit] = Hit{id_, generation_.load(std::memory_order_acquire), base, size};
    t_next_hit = (t_next_hit + 1) % kHits;
}

void AllocationRegistry::add(keel_device_addr base, std::uint64_t size) {
    std::unique_lock lock(mutex_);
    auto it = std::lower_bound(live_.begin(), live_.end(), base, base_less);
    if (it != live_.end() && it->first == base) {
        it->second = size;  // CUDA reused an address keel thought live: trust CUDA
        generation_.fetch_add(1, std::memory_order_acq_rel);
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
    generation_.fetch_add(1, std::memory_order_acq_rel);
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
    if (cached(addr, size)) return ok();
    std::shared_lock lock(mutex_);
    auto it = holding(addr);
    if (it == live_.end())
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     std::string(role) + " " + hex_addr(addr) + " is not a " + kind_);
    const std::uint64_t offset = addr - it->first;
    if (size <= it->second - offset) {
        remember(it->first, it->second);
        return ok();
    }
    return Error(KEEL_STATUS_OUT_OF_RANGE,
                 std::string(role) + " " + hex_addr(addr) + " + " + std::to_string(size) +
                     " bytes runs past the end of its " + kind_ + " (" + hex_addr(it->first) + ", " +
                     std::to_string(it->second) + " bytes)");
}

std::optional<std::uint64_t> AllocationRegistry::size_at(keel_device_addr base) const {
    std::shared_lock lock(mutex_);
    auto it = std::lower_bound(live_.begin(), live_.end(), base, base_less);
    if (it == live_.end() || it->first != base) return std::nullopt;
    return it->second;
}

bool AllocationRegistry::contains(keel_device_addr addr, std::uint64_t size) const noexcept {
    if (cached(addr, size)) return true;
    std::shared_lock lock(mutex_);
    auto it = holding(addr);
    if (it == live_.end() || size > it->second - (addr - it->first)) return false;
    remember(it->first, it->second);
    return true;
}

std::vector<std::pair<keel_device_addr, std::uint64_t>> AllocationRegistry::take_all() {
    std::unique_lock lock(mutex_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    return std::exchange(live_, {});
}

}  // namespace keel::cuda
