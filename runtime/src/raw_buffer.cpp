#include <keel/raw_buffer.hpp>

#include <keel/format.hpp>

#include "access.hpp"
#include "logging.hpp"
#include "plugin.hpp"
#include "view_range.hpp"

#include <utility>

namespace keel {

Result<RawBuffer> RawBuffer::allocate(const Device& device, std::uint64_t size) {
    if (size == 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[RawBuffer::allocate] size must be > 0 (on " + device.name() + ")");
    const std::uint64_t largest = device.properties().max_allocation;
    if (largest != 0 && size > largest)
        return Error(KEEL_STATUS_OUT_OF_MEMORY,
                     "[RawBuffer::allocate] " + format_bytes(size) +
                         " is larger than the largest allocation of " + device.name() + " (" +
                         format_bytes(largest) + ")");
    keel_device_addr address = 0;
    KEEL_TRY(detail::Access::slot(device).api().device_alloc(detail::Access::handle(device), size, &address));
    if (address == 0) {
        // 0 marks an empty buffer here; it cannot be a live allocation.
        return Error(KEEL_STATUS_INTERNAL, "[RawBuffer::allocate] " + device.name() +
                                               " returned device address 0 for a successful "
                                               "allocation");
    }
    return RawBuffer(device, address, size);
}

RawBuffer RawBuffer::adopt(const Device& device, keel_device_addr address, std::uint64_t size) noexcept {
    return RawBuffer(device, address, address == 0 ? 0 : size);
}

RawBuffer::RawBuffer(RawBuffer&& other) noexcept
    : device_(other.device_),
      address_(std::exchange(other.address_, 0)),
      size_(std::exchange(other.size_, 0)) {}

RawBuffer& RawBuffer::operator=(RawBuffer&& other) noexcept {
    if (this != &other) {
        if (auto r = free(); !r) detail::log_warn(r.error().message());
        device_ = other.device_;
        address_ = std::exchange(other.address_, 0);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

RawBuffer::~RawBuffer() {
    if (auto r = free(); !r)
        detail::log_error("[RawBuffer::~RawBuffer] " + r.error().message());
}

DeviceView RawBuffer::view() const noexcept {
    if (empty()) return {};
    return DeviceView(device_, address_, size_);
}

Result<DeviceView> RawBuffer::view(std::uint64_t offset, std::uint64_t size) const {
    if (empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[RawBuffer::view] the buffer is empty (moved-from or freed)");
    KEEL_TRY(detail::check_range("RawBuffer::view", offset, size, size_));
    return DeviceView(device_, address_ + offset, size);
}

Result<void> RawBuffer::free() {
    if (empty()) return ok();
    keel_device_addr address = std::exchange(address_, 0);
    size_ = 0;
    return detail::Access::slot(device_).api().device_free(detail::Access::handle(device_), address);
}

keel_device_addr RawBuffer::release() noexcept {
    size_ = 0;
    return std::exchange(address_, 0);
}

}  // namespace keel
