// PinnedBuffer: page-locked host memory, from which and into which a stream
// copies directly (DMA), without staging.
#pragma once

#include <keel/device.hpp>
#include <keel/export.hpp>
#include <keel/result.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace keel {

namespace detail {
struct Access;
}  // namespace detail
namespace memory {
class PinnedUses;
}  // namespace memory

// Owns host memory for fast asynchronous copies with one device: pinned
// (page-locked) memory from the plugin's host_alloc when it has one,
// otherwise ordinary host memory aligned to 4096 bytes (is_pinned() then
// says false; copies still work, possibly slower).
//
// A copy from or into it reads or writes it when the copy runs, not at the
// call: the caller keeps it unchanged until then (synchronize, or wait on
// an event recorded after the copy), and reads what a copy wrote only after
// that. That is the price of skipping staging; Stream::copy from any other
// host range stages and has no such rule.
//
// Move-only. A moved-from buffer is empty (data() null, size 0). The
// destructor frees the memory once the copies enqueued with it stopped
// running (it blocks for them, as cudaFreeHost does), so dropping it on an
// error path that skipped its synchronisation never frees memory a queued
// copy still reads or writes.
//
// Threads: may be sent to another thread; the bytes are plain host memory
// (synchronise access to them as you would for any buffer).
class KEEL_API PinnedBuffer {
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
    KEEL_LOCAL PinnedBuffer(Device device, void* data, std::uint64_t size, bool pinned,
                            std::unique_ptr<memory::PinnedUses> uses) noexcept;
    KEEL_LOCAL void reset() noexcept;
    friend struct detail::Access;

    Device device_;
    void* data_ = nullptr;
    std::uint64_t size_ = 0;
    bool pinned_ = false;
    std::unique_ptr<memory::PinnedUses> uses_;  // the copies that may still use it
};

}  // namespace keel
