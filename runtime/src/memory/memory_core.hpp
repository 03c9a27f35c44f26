// Everything the memory machinery keeps for one device, owned in the order
// that makes shutdown safe: the tracker is drained (every deferred release
// runs) before the staging pool and the allocator give their memory back,
// and the event pool goes last.
#pragma once

#include <keel/memory_config.hpp>

#include "memory/block_allocator.hpp"
#include "memory/completion_tracker.hpp"
#include "memory/device_ops.hpp"
#include "memory/event_pool.hpp"
#include "memory/staging_pool.hpp"

#include <memory>

namespace keel::detail {
struct DeviceSlot;
}  // namespace keel::detail

namespace keel::memory {

// Sync: shared by every thread that uses the device. Shared ownership: a
// DeviceMemory handle, a Stream, and every Buffer, Fence and HostCopy made
// from it hold a reference, so nothing made from a core outlives it.
class MemoryCore {
public:
    // A core over a plugin's device: owns `ops` (which keeps the plugin
    // loaded); `device` names the device for the views of its buffers.
    // Throws std::bad_alloc or std::system_error (the reclaimer thread).
    [[nodiscard]] static std::shared_ptr<MemoryCore> create(std::unique_ptr<DeviceOps> ops,
                                                            const MemoryConfig& config,
                                                            const detail::DeviceSlot* device);
    // A core over `ops`, which must outlive it (tests: a fake device).
    [[nodiscard]] static std::shared_ptr<MemoryCore> create(DeviceOps& ops, const MemoryConfig& config);

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
    // The device its buffers' views name (null for a fake device).
    [[nodiscard]] const detail::DeviceSlot* device() const noexcept { return device_; }

private:
    MemoryCore(std::unique_ptr<DeviceOps> owned, DeviceOps& ops, const MemoryConfig& config,
               const detail::DeviceSlot* device);
    // The last owner's release. When it lets go inside a deferred release
    // (the reclaimer's or a sweeping thread's: the release is still running
    // inside this core) or inside a host function (which may not call the
    // plugin), the core is destroyed on a thread of its own instead.
    static void release(MemoryCore* core) noexcept;

    std::unique_ptr<DeviceOps> owned_ops_;
    DeviceOps& ops_;
    const MemoryConfig config_;
    const detail::DeviceSlot* device_;
    EventPool events_;
    CompletionTracker tracker_;
    BlockAllocator allocator_;
    StagingPool staging_;
};

}  // namespace keel::memory
