// Asynchronous copies between host containers and device buffers.
//
// Host -> device returns as soon as the copy is enqueued and the caller may
// destroy or change its container at once: the data is first copied into a
// pinned staging block (or, for at most KEEL_INLINE_COPY_MAX bytes, captured
// by the plugin's memcpy_h2d_inline), which goes back to the pool when the
// device has read it. Large copies are split into chunks so that filling
// one chunk overlaps with the device copying the previous one.
//
// Device -> host lands in pinned staging; HostCopy::wait() (or
// HostFuture::get()) waits for it and copies it into the container. Dropping
// a HostCopy without waiting cancels delivery: the container is never
// touched and the staging returns to the pool when the device is done.
#pragma once

#include <keel/memory/cached_buffer.hpp>
#include <keel/memory/deferred_task.hpp>
#include <keel/memory/memory_core.hpp>

#include <cstddef>
#include <cstdint>
#include <ranges>
#include <span>
#include <type_traits>
#include <vector>

namespace keel::memory {

// Enqueues a copy of `src` to device memory [dst, dst + src.size()) on
// `stream`. `src` may be destroyed as soon as this returns.
[[nodiscard]] Result<void> copy_to_device(MemoryCore& core, keel_stream stream,
                                          keel_device_addr dst, std::span<const std::byte> src);

// The same into a buffer, at `offset` bytes; bounds-checked. `src` is any
// contiguous range of trivially copyable elements (std::span, std::vector,
// std::array, ...).
template <std::ranges::contiguous_range R>
    requires std::is_trivially_copyable_v<std::ranges::range_value_t<R>>
[[nodiscard]] Result<void> copy_from_host(MemoryCore& core, keel_stream stream, const R& src,
                                          const CachedBuffer& dst, std::uint64_t offset = 0) {
    const auto bytes = std::as_bytes(std::span(std::ranges::data(src), std::ranges::size(src)));
    if (offset > dst.size() || bytes.size() > dst.size() - offset)
        return Error(KEEL_STATUS_OUT_OF_RANGE,
                     "[copy_from_host] " + std::to_string(bytes.size()) + " bytes at offset " +
                         std::to_string(offset) + " do not fit a buffer of " +
                         std::to_string(dst.size()) + " bytes");
    return copy_to_device(core, stream, dst.addr() + offset, bytes);
}

// Enqueues a copy of `src` to [dst, dst + src.size()) straight from memory
// that `keep_alive` owns, then holds `keep_alive` on `stream` until the copy
// ran: no staging copy. (Tiny copies still take the inline path.)
[[nodiscard]] Result<void> copy_to_device_owned(MemoryCore& core, keel_stream stream,
                                                keel_device_addr dst, std::span<const std::byte> src,
                                                DeferredTask keep_alive);

// Takes the vector instead of copying it: the device reads its storage
// directly and the vector is destroyed once the copy ran (a hold). For the
// caller it is gone at once, as with the staged overload, but the bytes are
// copied once instead of twice.
template <class T>
    requires std::is_trivially_copyable_v<T>
[[nodiscard]] Result<void> copy_from_host(MemoryCore& core, keel_stream stream, std::vector<T>&& src,
                                          const CachedBuffer& dst, std::uint64_t offset = 0) {
    const auto bytes = std::as_bytes(std::span(src));
    if (offset > dst.size() || bytes.size() > dst.size() - offset)
        return Error(KEEL_STATUS_OUT_OF_RANGE,
                     "[copy_from_host] " + std::to_string(bytes.size()) + " bytes at offset " +
                         std::to_string(offset) + " do not fit a buffer of " +
                         std::to_string(dst.size()) + " bytes");
    // Moving a std::vector keeps its storage, so `bytes` stays valid.
    return copy_to_device_owned(core, stream, dst.addr() + offset, bytes,
                                owning(std::move(src)));
}

// A device -> host copy in flight. Move-only; Send, not Sync.
class HostCopy {
public:
    HostCopy() = default;  // already complete, copies nothing
    HostCopy(const HostCopy&) = delete;
    HostCopy& operator=(const HostCopy&) = delete;
    HostCopy(HostCopy&& other) noexcept { swap(other); }
    HostCopy& operator=(HostCopy&& other) noexcept {
        if (this != &other) {
            abandon();
            swap(other);
        }
        return *this;
    }
    // Without wait(): cancels delivery (never blocks, never touches the
    // destination).
    ~HostCopy() { abandon(); }

    // Blocks until the copy completed and the data is in the destination.
    // Returns the stream's asynchronous error if its work failed. Later calls
    // return ok at once.
    [[nodiscard]] Result<void> wait();
    // Non-blocking: whether wait() would return at once.
    [[nodiscard]] Result<bool> ready();

private:
    friend Result<HostCopy> copy_from_device(MemoryCore&, keel_stream, std::span<std::byte>,
                                             keel_device_addr);
    struct Chunk {
        StagingBlock block;
        keel_event event = nullptr;
        std::uint64_t seq = 0;
        std::uint64_t offset = 0;
        std::uint64_t size = 0;
    };
    void abandon() noexcept;
    void swap(HostCopy& other) noexcept {
        std::swap(core_, other.core_);
        std::swap(stream_, other.stream_);
        std::swap(dst_, other.dst_);
        chunks_.swap(other.chunks_);
    }

    MemoryCore* core_ = nullptr;
    keel_stream stream_ = nullptr;
    std::byte* dst_ = nullptr;
    std::vector<Chunk> chunks_;
};

// Enqueues a copy of device memory [src, src + dst.size()) into `dst` on
// `stream`. `dst` must stay valid until wait() returns (or the HostCopy is
// dropped).
[[nodiscard]] Result<HostCopy> copy_from_device(MemoryCore& core, keel_stream stream,
                                                std::span<std::byte> dst, keel_device_addr src);

// A device -> host copy that owns its destination vector.
template <class T>
class HostFuture {
public:
    HostFuture(std::vector<T> data, HostCopy copy) : data_(std::move(data)), copy_(std::move(copy)) {}
    HostFuture(const HostFuture&) = delete;
    HostFuture& operator=(const HostFuture&) = delete;
    // Moving keeps the vector's heap storage, which the copy writes into.
    HostFuture(HostFuture&&) noexcept = default;
    HostFuture& operator=(HostFuture&&) noexcept = default;
    ~HostFuture() = default;

    [[nodiscard]] Result<bool> ready() { return copy_.ready(); }
    // Waits and hands over the data.
    [[nodiscard]] Result<std::vector<T>> get() && {
        KEEL_TRY(copy_.wait());
        return std::move(data_);
    }

private:
    std::vector<T> data_;
    HostCopy copy_;
};

// Copies `count` elements from `src` at `offset` bytes into a new vector.
template <class T>
    requires std::is_trivially_copyable_v<T>
[[nodiscard]] Result<HostFuture<T>> copy_to_host(MemoryCore& core, keel_stream stream,
                                                 const CachedBuffer& src, std::size_t count,
                                                 std::uint64_t offset = 0) {
    const std::uint64_t bytes = std::uint64_t{count} * sizeof(T);
    if (offset > src.size() || bytes > src.size() - offset)
        return Error(KEEL_STATUS_OUT_OF_RANGE,
                     "[copy_to_host] " + std::to_string(bytes) + " bytes at offset " +
                         std::to_string(offset) + " exceed a buffer of " +
                         std::to_string(src.size()) + " bytes");
    std::vector<T> data(count);
    KEEL_TRY_ASSIGN(HostCopy copy, copy_from_device(core, stream, std::as_writable_bytes(std::span(data)),
                                                    src.addr() + offset));
    return HostFuture<T>(std::move(data), std::move(copy));
}

}  // namespace keel::memory
