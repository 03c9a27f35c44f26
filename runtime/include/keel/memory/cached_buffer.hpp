// A device buffer from the caching allocator: move-only, freed (stream-
// ordered) when dropped.
#pragma once

#include <keel/memory/block_allocator.hpp>
#include <keel/memory/memory_core.hpp>

#include <cstdint>
#include <vector>

namespace keel::memory {

// Send, not Sync: it may be moved to and dropped on another thread, but
// record_stream() mutates it, so concurrent use of one buffer needs the
// caller's own synchronisation. Must not outlive its MemoryCore.
class CachedBuffer {
public:
    CachedBuffer() = default;  // empty: addr() == 0, size() == 0
    CachedBuffer(const CachedBuffer&) = delete;
    CachedBuffer& operator=(const CachedBuffer&) = delete;
    CachedBuffer(CachedBuffer&& other) noexcept { swap(other); }
    CachedBuffer& operator=(CachedBuffer&& other) noexcept {
        if (this != &other) {
            reset();
            swap(other);
        }
        return *this;
    }
    ~CachedBuffer() { reset(); }

    // `size` > 0 bytes for use on `stream`, which owns the block.
    [[nodiscard]] static Result<CachedBuffer> allocate(MemoryCore& core, keel_stream stream,
                                                       std::uint64_t size);

    [[nodiscard]] keel_device_addr addr() const noexcept {
        return block_ ? BlockAllocator::address(block_) : 0;
    }
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    // The rounded size actually reserved for it.
    [[nodiscard]] std::uint64_t capacity() const noexcept {
        return block_ ? BlockAllocator::size(block_) : 0;
    }
    // The stream it was allocated on (handle value).
    [[nodiscard]] keel_stream stream() const noexcept {
        return block_ ? BlockAllocator::stream(block_) : nullptr;
    }
    [[nodiscard]] bool empty() const noexcept { return block_ == nullptr; }
    explicit operator bool() const noexcept { return block_ != nullptr; }

    // Declares that the work enqueued on `stream` so far uses this buffer:
    // when the buffer is freed, its memory is not reused until that work
    // completed. Call it after enqueuing the use (again after later uses; one
    // event per stream is re-recorded). No-op on the buffer's own stream.
    [[nodiscard]] Result<void> record_stream(keel_stream stream);

    // Frees the buffer now (stream-ordered; see BlockAllocator::free).
    void reset() noexcept;

private:
    void swap(CachedBuffer& other) noexcept {
        std::swap(core_, other.core_);
        std::swap(block_, other.block_);
        std::swap(size_, other.size_);
        uses_.swap(other.uses_);
    }

    MemoryCore* core_ = nullptr;
    Block* block_ = nullptr;
    std::uint64_t size_ = 0;
    std::vector<RecordedUse> uses_;
};

}  // namespace keel::memory
