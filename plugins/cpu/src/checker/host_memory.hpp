// Checker access to host memory the program handed over (the host side of
// a copy), without touching it directly: the program may have freed and
// unmapped it, and the checker must report that, never fault on it. Reads
// and writes go through process_vm_readv/process_vm_writev on our own
// process, which fail with EFAULT where a direct access would fault. (Where
// those calls are not allowed, e.g. a seccomp filter, a direct copy after a
// mincore() probe is used; that keeps a small window in which an unmap on
// another thread is not caught.)
//
// Thread-safety: free functions, callable from any thread.
#pragma once

#include <keel/result.hpp>

#include <cstddef>
#include <cstdint>

namespace keel::cpu::host_memory {

// Copies [src, src + size) of host memory into `dst` (plugin memory).
// Fails (OUT_OF_RANGE) naming the first address that is not mapped.
[[nodiscard]] Result<void> read(std::byte* dst, const void* src, std::uint64_t size);
// Copies `src` (plugin memory) into host memory [dst, dst + size).
[[nodiscard]] Result<void> write(void* dst, const std::byte* src, std::uint64_t size);
// Whether every page of [p, p + size) is mapped (readable), without
// touching it; fails naming the first page that is not.
[[nodiscard]] Result<void> probe(const void* p, std::uint64_t size);

// "did these bytes change" (FNV-1a over 8-byte words; not cryptographic).
// Feeding the same bytes in chunks that are multiples of 8 gives the same value.
class Fingerprint {
public:
    void add(const std::byte* data, std::uint64_t size) noexcept;
    [[nodiscard]] std::uint64_t value() const noexcept { return h_ ^ size_; }

private:
    std::uint64_t h_ = 1469598103934665603ull;
    std::uint64_t size_ = 0;
};

// The fingerprint of host memory [p, p + size), read safely.
[[nodiscard]] Result<std::uint64_t> fingerprint(const void* p, std::uint64_t size);

}  // namespace keel::cpu::host_memory
