// Device memory (DeviceBuffer, and DeviceView into it) and pinned host
// memory (PinnedBuffer).
#pragma once

#include <keel/device.hpp>
#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace keel {

// A non-owning range of device memory: device, address, size in bytes.
// This is what copies, memset and kernel arguments take, so that any owner
// of device memory (DeviceBuffer, or a block of a caching allocator built on
// top) can be used with them.
//
// Like std::span, a view does not keep its memory alive: it must not be
// used after the memory it names is freed. An empty view (default, or from
// an empty buffer) has no device and is rejected by every operation except
// as an absent kernel argument.
//
// Threads: a plain value; copy it anywhere.
class DeviceView {
public:
    DeviceView() = default;
    // Names [address, address + size) of `device`. The caller vouches that
    // it lies inside one allocation of that device (the plugin checks what
    // it can when the view is used).
    DeviceView(const Device& device, keel_device_addr address, std::uint64_t size) noexcept
        : slot_(&device.slot()), address_(address), size_(size) {}

    [[nodiscard]] keel_device_addr address() const noexcept { return address_; }
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return slot_ == nullptr; }
    // Whether this view's memory is on `device` (false when empty).
    [[nodiscard]] bool on(const Device& device) const noexcept { return slot_ == &device.slot(); }

    // The part [offset, offset + size) of this view; OUT_OF_RANGE if it does
    // not fit.
    [[nodiscard]] Result<DeviceView> sub(std::uint64_t offset, std::uint64_t size) const;

    // Internal: the device, or null when empty.
    [[nodiscard]] const detail::DeviceSlot* slot() const noexcept { return slot_; }

private:
    const detail::DeviceSlot* slot_ = nullptr;
    keel_device_addr address_ = 0;
    std::uint64_t size_ = 0;
};

// Owns one device allocation (device_alloc ... device_free).
//
// Move-only. A moved-from buffer is empty: size 0, and operations given its
// view fail with INVALID_ARGUMENT. The destructor frees the memory; an
// error there is logged, since a destructor cannot return it (use free()
// to see it). The caller must make sure no enqueued work still uses the
// memory when it is freed (synchronize, or wait on an event), as with the
// C ABI's device_free.
//
// Threads: may be sent to another thread; const members may be called
// from several threads at once.
class DeviceBuffer {
public:
    // Allocates `size` > 0 bytes on `device`. OUT_OF_MEMORY when it is larger
    // than the device's largest allocation or does not fit now.
    [[nodiscard]] static Result<DeviceBuffer> allocate(const Device& device, std::uint64_t size);

    // Takes ownership of `address`, which must come from device_alloc of
    // `device` with `size` bytes (for allocators that manage raw memory).
    [[nodiscard]] static DeviceBuffer adopt(const Device& device, keel_device_addr address,
                                            std::uint64_t size) noexcept;

    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& other) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
    ~DeviceBuffer();

    [[nodiscard]] const Device& device() const noexcept { return device_; }
    [[nodiscard]] keel_device_addr address() const noexcept { return address_; }
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return address_ == 0; }

    // The whole buffer (an empty view when the buffer is empty).
    [[nodiscard]] DeviceView view() const noexcept;
    operator DeviceView() const noexcept { return view(); }  // NOLINT: a buffer is usable as its view
    // [offset, offset + size) of the buffer; OUT_OF_RANGE if it does not fit.
    [[nodiscard]] Result<DeviceView> view(std::uint64_t offset, std::uint64_t size) const;

    // Frees now and returns the plugin's error, if any; the buffer is empty
    // afterwards either way. Freeing an empty buffer does nothing.
    [[nodiscard]] Result<void> free();

    // Gives up ownership: returns the address (the caller now frees it with
    // device_free) and leaves the buffer empty.
    [[nodiscard]] keel_device_addr release() noexcept;

private:
    DeviceBuffer(Device device, keel_device_addr address, std::uint64_t size) noexcept
        : device_(std::move(device)), address_(address), size_(size) {}

    Device device_;
    keel_device_addr address_ = 0;
    std::uint64_t size_ = 0;
};

// Owns host memory for fast asynchronous copies with one device: pinned
// (page-locked) memory from the plugin's host_alloc when it has one,
// otherwise ordinary host memory aligned to 4096 bytes (is_pinned() then
// says false; copies still work, possibly slower).
//
// Move-only. A moved-from buffer is empty (data() null, size 0). The
// destructor frees the memory; the caller must make sure no enqueued copy
// still reads or writes it.
//
// Threads: may be sent to another thread; the bytes are plain host memory
// (synchronise access to them as you would for any buffer).
class PinnedBuffer {
public:
    // Allocates `size` > 0 bytes usable by copies on streams of `device`.
    [[nodiscard]] static Result<PinnedBuffer> allocate(const Device& device, std::uint64_t size);

    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
    PinnedBuffer(PinnedBuffer&& other) noexcept;
    PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
    ~PinnedBuffer();

    [[nodiscard]] const Device& device() const noexcept { return device_; }
    [[nodiscard]] void* data() noexcept { return data_; }
    [[nodiscard]] const void* data() const noexcept { return data_; }
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return data_ == nullptr; }
    // True when the memory came from the plugin's host_alloc.
    [[nodiscard]] bool is_pinned() const noexcept { return pinned_; }

    [[nodiscard]] std::span<std::byte> bytes() noexcept {
        return {static_cast<std::byte*>(data_), static_cast<std::size_t>(size_)};
    }
    [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
        return {static_cast<const std::byte*>(data_), static_cast<std::size_t>(size_)};
    }
    // The memory as elements of T (size() / sizeof(T) of them).
    template <class T>
    [[nodiscard]] std::span<T> as() noexcept {
        return {static_cast<T*>(data_), static_cast<std::size_t>(size_ / sizeof(T))};
    }
    template <class T>
    [[nodiscard]] std::span<const T> as() const noexcept {
        return {static_cast<const T*>(data_), static_cast<std::size_t>(size_ / sizeof(T))};
    }

private:
    PinnedBuffer(Device device, void* data, std::uint64_t size, bool pinned) noexcept
        : device_(std::move(device)), data_(data), size_(size), pinned_(pinned) {}
    void reset() noexcept;

    Device device_;
    void* data_ = nullptr;
    std::uint64_t size_ = 0;
    bool pinned_ = false;
};

}  // namespace keel
