// An owned, aligned block of host memory (the storage behind device memory
// and pinned memory). Move-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>

namespace keel::cpu {

class HostBlock {
public:
    HostBlock() = default;
    // Null on failure (host out of memory).
    [[nodiscard]] static HostBlock allocate(std::uint64_t size, std::size_t alignment) noexcept {
        HostBlock b;
        // Rounding up must not wrap a size near 2^64 to a few bytes.
        if (size > std::numeric_limits<std::size_t>::max() - (alignment - 1)) return b;
        const std::uint64_t rounded = (size + alignment - 1) / alignment * alignment;
        b.ptr_.reset(static_cast<std::byte*>(std::aligned_alloc(alignment, rounded)));
        b.size_ = b.ptr_ ? size : 0;
        return b;
    }
    HostBlock(const HostBlock&) = delete;
    HostBlock& operator=(const HostBlock&) = delete;
    HostBlock(HostBlock&&) noexcept = default;
    HostBlock& operator=(HostBlock&&) noexcept = default;
    ~HostBlock() = default;

    [[nodiscard]] std::byte* get() const noexcept { return ptr_.get(); }
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    explicit operator bool() const noexcept { return ptr_ != nullptr; }

private:
    struct Free {
        void operator()(std::byte* p) const noexcept { std::free(p); }
    };
    std::unique_ptr<std::byte, Free> ptr_;
    std::uint64_t size_ = 0;
};

// Fills `size` bytes with 32-bit `word` (the tail with its leading bytes).
void fill_words(std::byte* dst, std::uint64_t size, std::uint32_t word) noexcept;

}  // namespace keel::cpu
