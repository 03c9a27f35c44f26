#include <keel/memory/memory_core.hpp>

namespace keel::memory {

MemoryCore::MemoryCore(DeviceOps& ops, const MemoryConfig& config)
    : ops_(ops),
      config_(config),
      events_(ops_),
      tracker_(ops_, events_, config.limits.max_queued_per_stream, config.reclaim_interval),
      allocator_(ops_, events_, tracker_, config.allocator, config.limits),
      staging_(ops_, tracker_, config.staging, config.limits) {}

MemoryCore::MemoryCore(std::unique_ptr<DeviceOps> ops, const MemoryConfig& config)
    : owned_ops_(std::move(ops)),
      ops_(*owned_ops_),
      config_(config),
      events_(ops_),
      tracker_(ops_, events_, config.limits.max_queued_per_stream, config.reclaim_interval),
      allocator_(ops_, events_, tracker_, config.allocator, config.limits),
      staging_(ops_, tracker_, config.staging, config.limits) {}

MemoryCore::~MemoryCore() {
    // Deferred releases refer to the allocator and the staging pool: run
    // them all while both still exist. Members then go in reverse order.
    tracker_.shutdown();
}

}  // namespace keel::memory
