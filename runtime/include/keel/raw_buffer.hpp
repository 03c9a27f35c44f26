// RawBuffer: one raw allocation of the plugin (device_alloc ... device_free),
// outside the caching allocator. The unusual path: every allocation and free
// is a plugin call (on a GPU, a synchronising driver call), and freeing is
// not stream-ordered. Use Buffer unless you manage device memory yourself.
#pragma once

#include <keel/buffer.hpp>
#include <keel/device.hpp>
#include <keel/export.hpp>
#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstdint>

namespace keel {

// Owns one device allocation.
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
class KEEL_API RawBuffer {
public:
    // Allocates `size` > 0 bytes on `device`. OUT_OF_MEMORY when it is larger
    // than the device's largest allocation or does not fit now.
    [[nodiscard]] static Result<RawBuffer> allocate(const Device& device, std::uint64_t size);

    // Takes ownership of `address`, which must come from device_alloc of
    // `device` with `size` bytes (for allocators that manage raw memory).
    [[nodiscard]] static RawBuffer adopt(const Device& device, keel_device_addr address,
                                         std::uint64_t size) noexcept;

    RawBuffer(const RawBuffer&) = delete;
    RawBuffer& operator=(const RawBuffer&) = delete;
    RawBuffer(RawBuffer&& other) noexcept;
    RawBuffer& operator=(RawBuffer&& other) noexcept;
    ~RawBuffer();

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
    RawBuffer(Device device, keel_device_addr address, std::uint64_t size) noexcept
        : device_(std::move(device)), address_(address), size_(size) {}

    Device device_;
    keel_device_addr address_ = 0;
    std::uint64_t size_ = 0;
};

}  // namespace keel
