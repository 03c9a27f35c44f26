// The public C++ API of the memory machinery for one device: the stream-
// safe caching allocator, staged asynchronous copies, holds, fences and
// their statistics. docs/memory.md explains the design and the defaults.
#pragma once

#include <keel/buffer.hpp>
#include <keel/device.hpp>
#include <keel/stream.hpp>
#include <keel/memory/cached_buffer.hpp>
#include <keel/memory/config.hpp>
#include <keel/memory/fence.hpp>
#include <keel/memory/hold.hpp>
#include <keel/memory/memory_core.hpp>
#include <keel/memory/stats.hpp>
#include <keel/memory/transfer.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ranges>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace keel {

class DeviceMemory;

// Device memory from the caching allocator. Freed when dropped: at once
// reusable by the stream it was allocated on (stream order makes that safe);
// if it was used on other streams (record_stream), only once those uses
// completed.
//
// Move-only; an empty buffer (default, moved-from) has size 0 and an empty
// view. Send, not Sync: it may be moved to and dropped on another thread,
// but record_stream() needs exclusive access. It must not outlive every
// DeviceMemory handle of its device.
class CachedBuffer {
public:
    CachedBuffer() = default;
    CachedBuffer(const CachedBuffer&) = delete;
    CachedBuffer& operator=(const CachedBuffer&) = delete;
    CachedBuffer(CachedBuffer&&) noexcept = default;
    CachedBuffer& operator=(CachedBuffer&&) noexcept = default;
    ~CachedBuffer() = default;

    [[nodiscard]] keel_device_addr address() const noexcept { return buffer_.addr(); }
    [[nodiscard]] std::uint64_t size() const noexcept { return buffer_.size(); }
    // Bytes actually reserved for it (the size rounded up).
    [[nodiscard]] std::uint64_t capacity() const noexcept { return buffer_.capacity(); }
    [[nodiscard]] bool empty() const noexcept { return buffer_.empty(); }
    // The stream that owns the block (its plugin handle).
    [[nodiscard]] keel_stream owner_stream() const noexcept { return buffer_.stream(); }

    // The whole buffer, for copies, memset and kernel arguments.
    [[nodiscard]] DeviceView view() const noexcept {
        return device_ == nullptr ? DeviceView() : DeviceView(*device_, address(), size());
    }
    operator DeviceView() const noexcept { return view(); }  // NOLINT: usable as its view
    // [offset, offset + size); OUT_OF_RANGE if it does not fit.
    [[nodiscard]] Result<DeviceView> view(std::uint64_t offset, std::uint64_t size) const {
        return view().sub(offset, size);
    }

    // Declares that the work enqueued on `stream` so far uses this buffer
    // (call it after enqueuing the use; again after later uses). When the
    // buffer is freed its memory is not reused before that work completed.
    // No-op on the owning stream.
    [[nodiscard]] Result<void> record_stream(const Stream& stream);

    // Frees now (as the destructor does).
    void reset() noexcept { buffer_.reset(); }

    // The core-level buffer, for code written over memory::MemoryCore.
    [[nodiscard]] memory::CachedBuffer& raw() noexcept { return buffer_; }
    [[nodiscard]] const memory::CachedBuffer& raw() const noexcept { return buffer_; }

private:
    friend class DeviceMemory;
    CachedBuffer(const Device* device, memory::CachedBuffer buffer) noexcept
        : device_(device), buffer_(std::move(buffer)) {}

    const Device* device_ = nullptr;  // owned by the DeviceMemory
    memory::CachedBuffer buffer_;
};

// A point in one stream's work that other streams can be ordered after on
// the device. See docs/memory.md, "Fences and events", for when to use a
// fence and when an Event. Move-only; enqueue_wait may be called from
// several threads.
class Fence {
public:
    Fence() = default;
    Fence(const Fence&) = delete;
    Fence& operator=(const Fence&) = delete;
    Fence(Fence&&) noexcept = default;
    Fence& operator=(Fence&&) noexcept = default;
    ~Fence() = default;

    // Work enqueued on `stream` after this call runs after the fence's
    // point. The host does not block.
    [[nodiscard]] Result<void> enqueue_wait(const Stream& stream) const;

private:
    friend class DeviceMemory;
    Fence(const Device* device, memory::Fence fence) noexcept
        : device_(device), fence_(std::move(fence)) {}
    const Device* device_ = nullptr;
    memory::Fence fence_;
};

using memory::HostCopy;
using memory::HostFuture;

// The memory machinery of one device. A cheap shared handle (one
// std::shared_ptr, named as such: shared ownership is the point): copies
// refer to the same allocator. Sync: every member may be called from any
// thread. The instance lives while any handle does; its destruction waits
// for every outstanding deferred release, then gives cached memory back.
class DeviceMemory {
public:
    // The device's shared instance, created with `config` on first use
    // (later calls get the existing one and ignore `config`).
    [[nodiscard]] static Result<DeviceMemory> for_device(const Device& device,
                                                         const memory::MemoryConfig& config = {});
    // A private instance with its own pools (tests, benchmarks, isolation).
    [[nodiscard]] static Result<DeviceMemory> create(const Device& device,
                                                     const memory::MemoryConfig& config = {});

    DeviceMemory(const DeviceMemory&) = default;
    DeviceMemory& operator=(const DeviceMemory&) = default;
    DeviceMemory(DeviceMemory&&) noexcept = default;
    DeviceMemory& operator=(DeviceMemory&&) noexcept = default;
    ~DeviceMemory() = default;

    [[nodiscard]] const Device& device() const noexcept;

    // `size` > 0 bytes owned by `stream`.
    [[nodiscard]] Result<CachedBuffer> allocate(const Stream& stream, std::uint64_t size) const;

    // Host -> device: returns once enqueued; `src` (any contiguous range of
    // trivially copyable elements) may be destroyed at once.
    template <std::ranges::contiguous_range R>
        requires std::is_trivially_copyable_v<std::ranges::range_value_t<R>>
    [[nodiscard]] Result<void> copy_from_host(const Stream& stream, const R& src,
                                              const CachedBuffer& dst, std::uint64_t offset = 0) const {
        KEEL_TRY(check_stream(stream, "copy_from_host"));
        return memory::copy_from_host(core(), stream.native(), src, dst.raw(), offset);
    }

    // Host -> device taking the vector: no staging copy; the vector is
    // destroyed once the device has read it.
    template <class T>
        requires std::is_trivially_copyable_v<T>
    [[nodiscard]] Result<void> copy_from_host(const Stream& stream, std::vector<T>&& src,
                                              const CachedBuffer& dst, std::uint64_t offset = 0) const {
        KEEL_TRY(check_stream(stream, "copy_from_host"));
        return memory::copy_from_host(core(), stream.native(), std::move(src), dst.raw(), offset);
    }

    // Device -> host into a new vector of `count` elements: HostFuture::get()
    // waits and hands it over.
    template <class T>
        requires std::is_trivially_copyable_v<T>
    [[nodiscard]] Result<HostFuture<T>> copy_to_host(const Stream& stream, const CachedBuffer& src,
                                                     std::size_t count, std::uint64_t offset = 0) const {
        KEEL_TRY(check_stream(stream, "copy_to_host"));
        return memory::copy_to_host<T>(core(), stream.native(), src.raw(), count, offset);
    }

    // Device -> host into `dst`, delivered by HostCopy::wait(); `dst` must
    // stay valid until then.
    template <class T>
        requires std::is_trivially_copyable_v<T>
    [[nodiscard]] Result<HostCopy> copy_to_host(const Stream& stream, const CachedBuffer& src,
                                                std::span<T> dst, std::uint64_t offset = 0) const {
        KEEL_TRY(check_stream(stream, "copy_to_host"));
        const std::uint64_t bytes = dst.size_bytes();
        if (offset > src.size() || bytes > src.size() - offset)
            return Error(KEEL_STATUS_OUT_OF_RANGE, "[copy_to_host] " + std::to_string(bytes) +
                                                       " bytes at offset " + std::to_string(offset) +
                                                       " exceed a buffer of " +
                                                       std::to_string(src.size()) + " bytes");
        return memory::copy_from_device(core(), stream.native(), std::as_writable_bytes(dst),
                                        src.address() + offset);
    }

    // Keeps `objects` alive until `stream` reaches this point, then destroys
    // them on a host thread, without any host wait.
    template <class... T>
    [[nodiscard]] Result<void> hold(const Stream& stream, T&&... objects) const {
        KEEL_TRY(check_stream(stream, "hold"));
        return memory::hold(core(), stream.native(), std::forward<T>(objects)...);
    }

    // A fence at the current end of `from`'s work.
    [[nodiscard]] Result<Fence> fence(const Stream& from) const;
    // `to` runs its later work after everything enqueued on `from` so far
    // (device-side; the host does not block).
    [[nodiscard]] Result<void> order_after(const Stream& to, const Stream& from) const;

    // Releases every completed deferred operation now. Never waits for the
    // device; waits only for releases other threads are running right now,
    // so what had completed is released when this returns.
    void sweep() const noexcept;
    // Waits for every outstanding tracked operation (pending frees, staged
    // copies, holds, fences) and releases it.
    void synchronize() const noexcept;
    // Returns every entirely free cached segment to the plugin.
    [[nodiscard]] Result<void> release_cached() const;

    [[nodiscard]] memory::AllocatorStats stats() const;
    [[nodiscard]] memory::MemorySnapshot snapshot() const;
    [[nodiscard]] memory::StagingStats staging_stats() const;
    [[nodiscard]] memory::TrackerStats tracker_stats() const;
    void reset_peaks() const noexcept;

    // The core, for code written against memory::MemoryCore.
    [[nodiscard]] memory::MemoryCore& core() const noexcept;

private:
    struct Impl;
    explicit DeviceMemory(std::shared_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
    [[nodiscard]] Result<void> check_stream(const Stream& stream, const char* where) const;

    std::shared_ptr<Impl> impl_;
};

}  // namespace keel
