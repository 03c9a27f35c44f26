#include <keel/pinned_buffer.hpp>

#include <keel/format.hpp>

#include "access.hpp"
#include "logging.hpp"
#include "memory/pinned_uses.hpp"
#include "plugin.hpp"

#include <cstdlib>
#include <limits>
#include <utility>

#include <unistd.h>

namespace keel {

namespace {
constexpr std::uint64_t kFallbackAlignment = 4096;

// Physical memory of the host: page-locked memory cannot exceed it.
std::uint64_t host_memory_bytes() noexcept {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return std::numeric_limits<std::uint64_t>::max();
    return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}
}  // namespace

PinnedBuffer::PinnedBuffer(Device device, void* data, std::uint64_t size, bool pinned,
                           std::unique_ptr<memory::PinnedUses> uses) noexcept
    : device_(std::move(device)), data_(data), size_(size), pinned_(pinned), uses_(std::move(uses)) {}

Result<PinnedBuffer> PinnedBuffer::allocate(const Device& device, std::uint64_t size) {
    if (size == 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[PinnedBuffer::allocate] size must be > 0 (for " + device.name() + ")");
    // Checked here, for every plugin: a size near 2^64 would otherwise reach
    // allocators whose rounding wraps it to a few bytes.
    if (const std::uint64_t host = host_memory_bytes(); size > host)
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[PinnedBuffer::allocate] " + format_bytes(size) + " (" +
                                                    std::to_string(size) + " bytes) for " + device.name() +
                                                    " is more than the host's memory (" +
                                                    format_bytes(host) + ")");
    auto uses = std::make_unique<memory::PinnedUses>();
    const detail::PluginApi& api = detail::Access::slot(device).api();
    if (api.has_host_alloc()) {
        void* p = nullptr;
        KEEL_TRY(api.host_alloc(detail::Access::handle(device), size, &p));
        if (p == nullptr)
            return Error(KEEL_STATUS_INTERNAL, "[PinnedBuffer::allocate] " + device.name() +
                                                   " host_alloc succeeded but returned null");
        return PinnedBuffer(device, p, size, true, std::move(uses));
    }
    // No host_alloc: ordinary, page-aligned host memory.
    const std::uint64_t rounded = (size + kFallbackAlignment - 1) / kFallbackAlignment * kFallbackAlignment;
    if (rounded < size)  // overflow
        return Error(KEEL_STATUS_OUT_OF_MEMORY,
                     "[PinnedBuffer::allocate] " + std::to_string(size) + " bytes cannot be allocated");
    void* p = std::aligned_alloc(kFallbackAlignment, static_cast<std::size_t>(rounded));
    if (p == nullptr)
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[PinnedBuffer::allocate] host allocation of " +
                                                    format_bytes(size) + " failed");
    detail::log_debug("[PinnedBuffer::allocate] " + device.name() + " has no host_alloc; using pageable memory");
    return PinnedBuffer(device, p, size, false, std::move(uses));
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : device_(other.device_),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      pinned_(std::exchange(other.pinned_, false)),
      uses_(std::move(other.uses_)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
        reset();
        device_ = other.device_;
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
        pinned_ = std::exchange(other.pinned_, false);
        uses_ = std::move(other.uses_);
    }
    return *this;
}

PinnedBuffer::~PinnedBuffer() { reset(); }

void PinnedBuffer::reset() noexcept {
    if (data_ == nullptr) return;
    // Copies enqueued with it run first, also after a failed call.
    if (uses_) uses_->wait();
    void* p = std::exchange(data_, nullptr);
    size_ = 0;
    if (!std::exchange(pinned_, false)) {
        std::free(p);
        return;
    }
    if (auto r = detail::Access::slot(device_).api().host_free(detail::Access::handle(device_), p); !r)
        detail::log_error("[PinnedBuffer::~PinnedBuffer] " + r.error().message());
}

}  // namespace keel
