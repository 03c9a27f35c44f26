// An owned, aligned block of host memory (the storage behind device memory
// and pinned memory). Move-only.
//
// Blocks of kMapBytes and more are mapped on their own and unmapped when
// they go, so their memory goes back to the OS at once. From malloc they
// would not: glibc raises its mmap threshold to the size of each mapped
// block it frees, after which multi-MiB blocks come from its per-thread
// arenas, and what those arenas free (the checker's quarantine releasing
// blocks other threads allocated) stays resident. Under ASan every block
// comes from malloc, where the sanitizer sees overflows and leaks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <utility>

#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define KEEL_HOST_BLOCK_MAPS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KEEL_HOST_BLOCK_MAPS 0
#endif
#endif
#ifndef KEEL_HOST_BLOCK_MAPS
#define KEEL_HOST_BLOCK_MAPS 1
#endif

namespace keel::cpu {

class HostBlock {
public:
    static constexpr std::uint64_t kMapBytes = KEEL_HOST_BLOCK_MAPS ? 128 * 1024 : UINT64_MAX;

    HostBlock() = default;
    // Null on failure (host out of memory).
    [[nodiscard]] static HostBlock allocate(std::uint64_t size, std::size_t alignment) noexcept {
        HostBlock b;
        // Rounding up must not wrap a size near 2^64 to a few bytes.
        if (size > std::numeric_limits<std::size_t>::max() - (alignment - 1)) return b;
        const std::uint64_t rounded = (size + alignment - 1) / alignment * alignment;
        const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
        if (rounded >= kMapBytes && alignment <= page) {
            const std::uint64_t mapped = (rounded + page - 1) / page * page;
            void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) return b;
            b.ptr_ = static_cast<std::byte*>(p);
            b.mapped_ = mapped;
        } else {
            b.ptr_ = static_cast<std::byte*>(std::aligned_alloc(alignment, rounded));
        }
        b.size_ = b.ptr_ ? size : 0;
        return b;
    }
    // Takes over `mapped` bytes mapped at `p` (unmapped when the block goes),
    // of which `size` are in use: storage shared with other processes.
    [[nodiscard]] static HostBlock adopt_mapping(std::byte* p, std::uint64_t size, std::uint64_t mapped) noexcept {
        HostBlock b;
        b.ptr_ = p;
        b.size_ = size;
        b.mapped_ = mapped;
        return b;
    }
    HostBlock(const HostBlock&) = delete;
    HostBlock& operator=(const HostBlock&) = delete;
    HostBlock(HostBlock&& other) noexcept
        : ptr_(std::exchange(other.ptr_, nullptr)), size_(std::exchange(other.size_, 0)),
          mapped_(std::exchange(other.mapped_, 0)) {}
    HostBlock& operator=(HostBlock&& other) noexcept {
        if (this != &other) {
            release();
            ptr_ = std::exchange(other.ptr_, nullptr);
            size_ = std::exchange(other.size_, 0);
            mapped_ = std::exchange(other.mapped_, 0);
        }
        return *this;
    }
    ~HostBlock() { release(); }

    [[nodiscard]] std::byte* get() const noexcept { return ptr_; }
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    explicit operator bool() const noexcept { return ptr_ != nullptr; }

private:
    void release() noexcept {
        if (ptr_ == nullptr) return;
        if (mapped_ != 0) ::munmap(ptr_, mapped_);
        else std::free(ptr_);
        ptr_ = nullptr;
    }

    std::byte* ptr_ = nullptr;
    std::uint64_t size_ = 0;
    std::uint64_t mapped_ = 0;  // bytes mapped; 0: from aligned_alloc
};

// Fills `size` bytes with 32-bit `word` (the tail with its leading bytes).
void fill_words(std::byte* dst, std::uint64_t size, std::uint32_t word) noexcept;

}  // namespace keel::cpu
