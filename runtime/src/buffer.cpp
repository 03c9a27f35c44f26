#include <keel/buffer.hpp>

#include "format.hpp"
#include "logging.hpp"
#include "plugin.hpp"

#include <cstdlib>
#include <utility>

namespace keel {

namespace {
constexpr std::uint64_t kFallbackAlignment = 4096;

Result<void> check_range(const char* where, std::uint64_t offset, std::uint64_t size,
                         std::uint64_t total) {
    if (offset > total || size > total - offset)
        return Error(KEEL_STATUS_OUT_OF_RANGE,
                     std::string("[") + where + "] range [" + std::to_string(offset) + ", " +
                         std::to_string(offset) + " + " + std::to_string(size) +
                         ") does not fit a view of " + std::to_string(total) + " bytes");
    return ok();
}
}  // namespace

// ---- DeviceView -----------------------------------------------------------

Result<DeviceView> DeviceView::sub(std::uint64_t offset, std::uint64_t size) const {
    if (empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[DeviceView::sub] the view is empty");
    KEEL_TRY(check_range("DeviceView::sub", offset, size, size_));
    DeviceView v = *this;
    v.address_ += offset;
    v.size_ = size;
    return v;
}

// ---- DeviceBuffer ---------------------------------------------------------

Result<DeviceBuffer> DeviceBuffer::allocate(const Device& device, std::uint64_t size) {
    if (size == 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[DeviceBuffer::allocate] size must be > 0 (on " + device.name() + ")");
    const std::uint64_t largest = device.properties().max_allocation;
    if (largest != 0 && size > largest)
        return Error(KEEL_STATUS_OUT_OF_MEMORY,
                     "[DeviceBuffer::allocate] " + detail::format_bytes(size) +
                         " is larger than the largest allocation of " + device.name() + " (" +
                         detail::format_bytes(largest) + ")");
    keel_device_addr address = 0;
    KEEL_TRY(device.slot().api().device_alloc(device.native(), size, &address));
    if (address == 0) {
        // 0 marks an empty buffer here; it cannot be a live allocation.
        return Error(KEEL_STATUS_INTERNAL, "[DeviceBuffer::allocate] " + device.name() +
                                               " returned device address 0 for a successful "
                                               "allocation");
    }
    return DeviceBuffer(device, address, size);
}

DeviceBuffer DeviceBuffer::adopt(const Device& device, keel_device_addr address,
                                 std::uint64_t size) noexcept {
    return DeviceBuffer(device, address, address == 0 ? 0 : size);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : device_(other.device_),
      address_(std::exchange(other.address_, 0)),
      size_(std::exchange(other.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
        if (auto r = free(); !r) detail::logger()->warn("{}", r.error().message());
        device_ = other.device_;
        address_ = std::exchange(other.address_, 0);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

DeviceBuffer::~DeviceBuffer() {
    if (auto r = free(); !r)
        detail::logger()->error("[DeviceBuffer::~DeviceBuffer] {}", r.error().message());
}

DeviceView DeviceBuffer::view() const noexcept {
    if (empty()) return {};
    return DeviceView(device_, address_, size_);
}

Result<DeviceView> DeviceBuffer::view(std::uint64_t offset, std::uint64_t size) const {
    if (empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[DeviceBuffer::view] the buffer is empty (moved-from or freed)");
    KEEL_TRY(check_range("DeviceBuffer::view", offset, size, size_));
    return DeviceView(device_, address_ + offset, size);
}

Result<void> DeviceBuffer::free() {
    if (empty()) return ok();
    keel_device_addr address = std::exchange(address_, 0);
    size_ = 0;
    return device_.slot().api().device_free(device_.native(), address);
}

keel_device_addr DeviceBuffer::release() noexcept {
    size_ = 0;
    return std::exchange(address_, 0);
}

// ---- PinnedBuffer ---------------------------------------------------------

Result<PinnedBuffer> PinnedBuffer::allocate(const Device& device, std::uint64_t size) {
    if (size == 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[PinnedBuffer::allocate] size must be > 0 (for " + device.name() + ")");
    const detail::PluginApi& api = device.slot().api();
    if (api.has_host_alloc()) {
        void* p = nullptr;
        KEEL_TRY(api.host_alloc(device.native(), size, &p));
        if (p == nullptr)
            return Error(KEEL_STATUS_INTERNAL, "[PinnedBuffer::allocate] " + device.name() +
                                                   " host_alloc succeeded but returned null");
        return PinnedBuffer(device, p, size, true);
    }
    // No host_alloc: ordinary, page-aligned host memory.
    const std::uint64_t rounded = (size + kFallbackAlignment - 1) / kFallbackAlignment * kFallbackAlignment;
    if (rounded < size)  // overflow
        return Error(KEEL_STATUS_OUT_OF_MEMORY,
                     "[PinnedBuffer::allocate] " + std::to_string(size) + " bytes cannot be allocated");
    void* p = std::aligned_alloc(kFallbackAlignment, static_cast<std::size_t>(rounded));
    if (p == nullptr)
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[PinnedBuffer::allocate] host allocation of " +
                                                    detail::format_bytes(size) + " failed");
    detail::logger()->debug("[PinnedBuffer::allocate] {} has no host_alloc; using pageable memory",
                            device.name());
    return PinnedBuffer(device, p, size, false);
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : device_(other.device_),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      pinned_(std::exchange(other.pinned_, false)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
        reset();
        device_ = other.device_;
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
        pinned_ = std::exchange(other.pinned_, false);
    }
    return *this;
}

PinnedBuffer::~PinnedBuffer() { reset(); }

void PinnedBuffer::reset() noexcept {
    if (data_ == nullptr) return;
    void* p = std::exchange(data_, nullptr);
    size_ = 0;
    if (!std::exchange(pinned_, false)) {
        std::free(p);
        return;
    }
    if (auto r = device_.slot().api().host_free(device_.native(), p); !r)
        detail::logger()->error("[PinnedBuffer::~PinnedBuffer] {}", r.error().message());
}

}  // namespace keel
