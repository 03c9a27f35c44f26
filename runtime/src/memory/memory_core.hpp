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

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

namespace keel::detail {
struct DeviceSlot;
}  // namespace keel::detail

namespace keel::memory {

// Sync: shared by every thread that uses the device. Shared ownership, so
// nothing made from a core outlives it, in two kinds:
// - handles: a MemoryPool, a Stream, a Fence and a HostCopy hold a
//   std::shared_ptr<MemoryCore> of the core's one live handle group;
// - buffers: an allocated block keeps its core alive through its pool's
//   count of blocks out (BlockAllocator::set_owner), so allocating and
//   freeing a buffer writes no counter shared with other threads.
// The handle group and every pool with blocks out hold the core itself;
// when the group goes, the pools let go as their last block comes back,
// and the core is released with the last of them. A core whose handles are
// gone is reachable again only through lifetime() (the device's registry of
// shared instances), which share() turns into a handle again.
class MemoryCore {
public:
    // A handle of a new core over a plugin's device: owns `ops` (which keeps
    // the plugin loaded); `device` names the device for the views of its
    // buffers. Throws std::bad_alloc or std::system_error (the reclaimer thread).
    [[nodiscard]] static std::shared_ptr<MemoryCore> create(std::unique_ptr<DeviceOps> ops,
                                                            const MemoryConfig& config,
                                                            const detail::DeviceSlot* device);
    // A handle of a new core over `ops`, which must outlive it (tests: a fake device).
    [[nodiscard]] static std::shared_ptr<MemoryCore> create(DeviceOps& ops, const MemoryConfig& config);
    // The core itself, weakly: alive while handles or buffers are.
    [[nodiscard]] std::weak_ptr<MemoryCore> lifetime() const { return self_; }
    // A handle of `core` (from lifetime()): joins its live handle group or
    // starts a new one. Throws std::bad_alloc.
    [[nodiscard]] static std::shared_ptr<MemoryCore> share(const std::shared_ptr<MemoryCore>& core);

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

    // Allocated bytes as a trace counts them (trace/hooks.cpp): the
    // allocator's figure at the session's first event, then each
    // allocation and free (the allocator's shared counter runs ahead by
    // what its pools have not flushed).
    struct TracedBytes {
        std::atomic<std::uint32_t> session{0};
        std::atomic<std::int64_t> allocated{0};
    };
    [[nodiscard]] TracedBytes& traced() noexcept { return traced_; }

private:
    MemoryCore(std::unique_ptr<DeviceOps> owned, DeviceOps& ops, const MemoryConfig& config,
               const detail::DeviceSlot* device);
    // The last owner's release. When it lets go inside a deferred release
    // (the reclaimer's or a sweeping thread's: the release is still running
    // inside this core) or inside a host function (which may not call the
    // plugin), the core is destroyed on a thread of its own instead.
    static void release(MemoryCore* core) noexcept;
    [[nodiscard]] static std::shared_ptr<MemoryCore> adopt(MemoryCore* core);
    // The last handle of a group went.
    void handles_gone() noexcept;
    struct Handles;

    std::unique_ptr<DeviceOps> owned_ops_;
    DeviceOps& ops_;
    const MemoryConfig config_;
    const detail::DeviceSlot* device_;
    EventPool events_;
    CompletionTracker tracker_;
    BlockAllocator allocator_;
    StagingPool staging_;
    std::weak_ptr<MemoryCore> self_;  // set once by adopt()
    std::mutex handles_mu_;           // orders a group's end after a newer group's start
    std::weak_ptr<Handles> handles_;  // guarded by handles_mu_
    TracedBytes traced_;
};

}  // namespace keel::memory
