// MemoryPool: a device's memory machinery (the stream-safe caching
// allocator behind Buffer, the pinned staging of copies, the tracker that
// releases holds and fences), its configuration and its statistics.
// docs/memory.md explains the design and the defaults.
#pragma once

#include <keel/device.hpp>
#include <keel/export.hpp>
#include <keel/memory_config.hpp>
#include <keel/memory_stats.hpp>
#include <keel/result.hpp>

#include <memory>

namespace keel {

namespace memory {
class MemoryCore;
}  // namespace memory

// Which instance a stream uses:
//   - Stream::create(device) uses the device's shared instance, created on
//     first need with the configuration given to MemoryPool::shared(device,
//     config) if that was called, else the default.
//   - Stream::create(memory) uses `memory`: a private instance from
//     MemoryPool::create (its own pools and statistics; tests, benchmarks,
//     isolation), or a handle of the shared one.
// Buffers, holds, fences and staged copies of a stream all go through that
// instance.
//
// A cheap shared handle (one std::shared_ptr): copies refer to the same
// instance, which lives while any handle, stream, Buffer, Fence or HostCopy
// that uses it does (and keeps the device's plugin loaded). Its destruction
// waits for every outstanding deferred release, then gives cached memory and
// events back to the plugin.
//
// Threads: Sync; every member may be called from any thread.
class KEEL_API MemoryPool {
public:
    // The device's shared instance: the existing one, or a new one with the
    // configuration the device's shared instance was given (the default if
    // none was).
    [[nodiscard]] static Result<MemoryPool> shared(const Device& device);
    // The device's shared instance with `config`: created with it, or the
    // existing one if it has exactly this configuration. FAILED_PRECONDITION
    // if it already exists with another one (configure the device before its
    // first buffer, staged copy, hold or fence). The configuration is
    // remembered: a shared instance created later for this device uses it.
    [[nodiscard]] static Result<MemoryPool> shared(const Device& device, const MemoryConfig& config);
    // (Every form: INVALID_ARGUMENT, naming the field, for a size of
    // `config` that is rounded up and above 2^62 bytes, which would wrap.)
    // A private instance with its own pools (tests, benchmarks, isolation).
    [[nodiscard]] static Result<MemoryPool> create(const Device& device,
                                                     const MemoryConfig& config = {});

    MemoryPool(const MemoryPool&) = default;
    MemoryPool& operator=(const MemoryPool&) = default;
    // Moving copies (like Device): a handle has no empty state, so a
    // moved-from one still refers to its instance.
    MemoryPool(MemoryPool&& other) noexcept : device_(other.device_), core_(other.core_) {}
    MemoryPool& operator=(MemoryPool&& other) noexcept {
        device_ = other.device_;
        core_ = other.core_;
        return *this;
    }
    ~MemoryPool() = default;

    [[nodiscard]] const Device& device() const noexcept { return device_; }
    [[nodiscard]] const MemoryConfig& config() const noexcept;

    // Releases every completed deferred operation now. Never waits for the
    // device; waits only for releases other threads are running right now,
    // so what had completed is released when this returns.
    void sweep() const noexcept;
    // Waits for every outstanding tracked operation (pending frees, staged
    // copies, holds, fences) and releases it.
    void synchronize() const noexcept;
    // Returns every entirely free cached segment to the plugin, each once
    // the work its stream enqueued before (which may still use a freed
    // buffer's memory) ran: it may wait for that work.
    [[nodiscard]] Result<void> release_cached() const;

    [[nodiscard]] AllocatorStats stats() const;
    [[nodiscard]] MemorySnapshot snapshot() const;
    [[nodiscard]] StagingStats staging_stats() const;
    [[nodiscard]] TrackerStats tracker_stats() const;
    void reset_peaks() const noexcept;

    // Whether two handles refer to the same instance.
    friend bool operator==(const MemoryPool& a, const MemoryPool& b) noexcept {
        return a.core_ == b.core_;
    }

private:
    friend struct detail::Access;
    MemoryPool(Device device, std::shared_ptr<memory::MemoryCore> core) noexcept
        : device_(std::move(device)), core_(std::move(core)) {}

    Device device_;
    std::shared_ptr<memory::MemoryCore> core_;
};

}  // namespace keel
