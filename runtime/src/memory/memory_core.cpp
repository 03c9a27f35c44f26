#include "memory/memory_core.hpp"

#include "host_func_guard.hpp"
#include "logging.hpp"

#include <system_error>
#include <thread>

namespace keel::memory {

MemoryCore::MemoryCore(std::unique_ptr<DeviceOps> owned, DeviceOps& ops, const MemoryConfig& config,
                       const detail::DeviceSlot* device)
    : owned_ops_(std::move(owned)),
      ops_(ops),
      config_(config),
      device_(device),
      events_(ops_),
      tracker_(ops_, events_, config.limits.max_queued_per_stream, config.reclaim_interval),
      allocator_(ops_, events_, tracker_, config.allocator, config.limits),
      staging_(ops_, tracker_, config.staging, config.limits) {}

std::shared_ptr<MemoryCore> MemoryCore::create(std::unique_ptr<DeviceOps> ops, const MemoryConfig& config,
                                               const detail::DeviceSlot* device) {
    DeviceOps& raw = *ops;
    return std::shared_ptr<MemoryCore>(new MemoryCore(std::move(ops), raw, config, device), &release);
}

std::shared_ptr<MemoryCore> MemoryCore::create(DeviceOps& ops, const MemoryConfig& config) {
    return std::shared_ptr<MemoryCore>(new MemoryCore(nullptr, ops, config, nullptr), &release);
}

MemoryCore::~MemoryCore() {
    // Deferred releases refer to the allocator and the staging pool: run
    // them all while both still exist. Members then go in reverse order.
    tracker_.shutdown();
}

void MemoryCore::release(MemoryCore* core) noexcept {
    if (!CompletionTracker::in_release() && !detail::in_host_func()) {
        delete core;
        return;
    }
    try {
        // The thread's shutdown waits for the release still running here.
        std::thread([core] { delete core; }).detach();
    } catch (const std::system_error& e) {
        detail::log_error(std::string("[MemoryCore] the last reference went inside a deferred release "
                                      "and no thread can destroy it: its memory is leaked (") +
                          e.what() + ")");
    }
}

}  // namespace keel::memory
