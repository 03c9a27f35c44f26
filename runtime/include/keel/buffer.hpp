// Buffer: device memory from the caching allocator, the buffer to use by
// default; DeviceView: a non-owning range of device memory, what copies,
// memset and kernel arguments take.
#pragma once

#include <keel/device.hpp>
#include <keel/export.hpp>
#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstdint>
#include <memory>
#include <source_location>
#include <vector>

namespace keel {

class Stream;

namespace memory {
class MemoryCore;   // a device's memory machinery (internal)
struct Block;       // a block of the caching allocator (internal)
struct RecordedUse;  // a use of a block on another stream (internal)
}  // namespace memory

// A non-owning range of device memory: device, address, size in bytes.
// This is what copies, memset and kernel arguments take, so that any owner
// of device memory (Buffer, RawBuffer, or an allocator of your own) can be
// used with them.
//
// Like std::span, a view does not keep its memory alive: it must not be
// used after the memory it names is freed. An empty view (default, or from
// an empty buffer) has no device and is rejected by every operation except
// as an absent kernel argument.
//
// Threads: a plain value; copy it anywhere.
class KEEL_API DeviceView {
public:
    DeviceView() = default;
    // Names [address, address + size) of `device`. The caller vouches that
    // it lies inside one allocation of that device (the plugin checks what
    // it can when the view is used).
    DeviceView(const Device& device, keel_device_addr address, std::uint64_t size) noexcept
        : slot_(device.slot_.get()), address_(address), size_(size) {}

    [[nodiscard]] keel_device_addr address() const noexcept { return address_; }
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return slot_ == nullptr; }
    // Whether this view's memory is on `device` (false when empty).
    [[nodiscard]] bool on(const Device& device) const noexcept { return slot_ == device.slot_.get(); }

    // The part [offset, offset + size) of this view; OUT_OF_RANGE if it does
    // not fit.
    [[nodiscard]] Result<DeviceView> sub(std::uint64_t offset, std::uint64_t size) const;

private:
    friend struct detail::Access;
    const detail::DeviceSlot* slot_ = nullptr;
    keel_device_addr address_ = 0;
    std::uint64_t size_ = 0;
};

// Device memory from the caching allocator of the memory instance of the
// stream it was allocated on (see MemoryPool): allocation and free cost
// no plugin call in steady state. The buffer belongs to that stream; freeing
// it (dropping it) is stream-ordered: the memory is at once reusable by that
// stream, whose in-order execution makes it safe. Other streams that use it
// must be declared with record_stream() (or the buffer handed to
// Stream::hold): the memory then comes back only once the work they had
// enqueued when the buffer was freed completed.
//
// A buffer keeps its memory instance, and so the device's plugin, alive
// (reference-counted): it may outlive every MemoryPool handle, stream and
// Runtime.
//
// Move-only. An empty buffer (default, moved-from, reset) has size 0 and an
// empty view, which every operation refuses. Send, not Sync: it may be moved
// to and dropped on another thread, but record_stream() needs exclusive
// access.
class KEEL_API Buffer {
public:
    // `size` > 0 bytes for use on `stream`, which owns the block.
    // OUT_OF_MEMORY (with the allocator's statistics) when it does not fit.
    // `where` is the caller's site, which the memory history keeps (see
    // set_memory_history in <keel/trace.hpp>).
    [[nodiscard]] static Result<Buffer> allocate(const Stream& stream, std::uint64_t size,
                                                 std::source_location where = std::source_location::current());

    Buffer() noexcept;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    Buffer(Buffer&& other) noexcept;
    Buffer& operator=(Buffer&& other) noexcept;
    ~Buffer();

    [[nodiscard]] keel_device_addr address() const noexcept { return view_.address(); }
    [[nodiscard]] std::uint64_t size() const noexcept { return view_.size(); }
    // Bytes actually reserved for it (the size rounded up).
    [[nodiscard]] std::uint64_t capacity() const noexcept;
    [[nodiscard]] bool empty() const noexcept { return block_ == nullptr; }

    // The whole buffer (an empty view when the buffer is empty).
    [[nodiscard]] DeviceView view() const noexcept { return view_; }
    operator DeviceView() const noexcept { return view_; }  // NOLINT: a buffer is usable as its view
    // [offset, offset + size) of the buffer; OUT_OF_RANGE if it does not fit.
    [[nodiscard]] Result<DeviceView> view(std::uint64_t offset, std::uint64_t size) const;

    // Declares that `stream` uses this buffer, as torch's record_stream:
    // when the buffer is freed, an event is recorded on `stream` and the
    // memory is not reused before it completed, so every use enqueued on
    // `stream` before the free is covered, whether enqueued before or after
    // this call; once per stream is enough. A stream closed before the free
    // already waited for its work. No-op on the owning stream.
    [[nodiscard]] Result<void> record_stream(const Stream& stream);

    // Frees now (as the destructor does); the buffer is empty afterwards.
    void reset() noexcept;

private:
    friend struct detail::Access;

    // The instance of block_, which the allocated block keeps alive: its
    // pool counts the blocks out, so a buffer writes no counter shared with
    // other threads. Released with the block (reset()).
    memory::MemoryCore* memory_ = nullptr;
    memory::Block* block_ = nullptr;
    DeviceView view_;
    std::vector<memory::RecordedUse> uses_;
};

}  // namespace keel
