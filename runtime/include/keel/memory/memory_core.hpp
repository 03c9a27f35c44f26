// Everything the memory machinery keeps for one device, owned in the order
// that makes shutdown safe: the tracker is drained (every deferred release
// runs) before the staging pool and the allocator give their memory back,
// and the event pool goes last.
#pragma once

#include <keel/memory/block_allocator.hpp>
#include <keel/memory/completion_tracker.hpp>
#include <keel/memory/config.hpp>
#include <keel/memory/device_ops.hpp>
#include <keel/memory/event_pool.hpp>
#include <keel/memory/staging_pool.hpp>

#include <memory>

namespace keel::memory {

// Sync: shared by every thread that uses the device. Must be destroyed
// before the device's plugin is shut down, and after every CachedBuffer,
// HostCopy and Fence made from it.
class MemoryCore {
public:
    // Uses `ops` without owning it (tests: a fake device that outlives us).
    MemoryCore(DeviceOps& ops, const MemoryConfig& config);
    // Owns `ops`.
    MemoryCore(std::unique_ptr<DeviceOps> ops, const MemoryConfig& config);
    MemoryCore(const MemoryCore&) = delete;
    MemoryCore& operator=(const MemoryCore&) = delete;
    MemoryCore(MemoryCore&&) = delete;
    MemoryCore& operator=(MemoryCore&&) = delete;
    ~MemoryCore();

    [[nodiscard]] DeviceOps& ops() noexcept { return ops_; }
    [[nodiscard]] EventPool& events() noexcept { return events_; }
    [[nodiscard]] CompletionTracker& tracker() noexcept { return tracker_; }
    [[nodiscard]] BlockAllocator& allocator() noexcept { return allocator_; }
    [[nodiscard]] StagingPool& staging() noexcept { return staging_; }
    [[nodiscard]] const MemoryConfig& config() const noexcept { return config_; }

private:
    std::unique_ptr<DeviceOps> owned_ops_;
    DeviceOps& ops_;
    const MemoryConfig config_;
    EventPool events_;
    CompletionTracker tracker_;
    BlockAllocator allocator_;
    StagingPool staging_;
};

}  // namespace keel::memory
