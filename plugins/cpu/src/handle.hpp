// Recognising our own handles: every handle type starts with a 32-bit magic
// number. A null, misaligned or foreign pointer is reported as an invalid
// argument instead of being used. (A pointer to freed memory cannot be
// recognised reliably; the ABI makes that the caller's bug.)
#pragma once

#include <cstdint>
#include <cstring>

namespace keel::cpu {

// True when `p` is non-null, aligned for T and starts with `magic`.
template <class T>
[[nodiscard]] bool looks_like(const void* p, std::uint32_t magic) noexcept {
    if (p == nullptr || reinterpret_cast<std::uintptr_t>(p) % alignof(T) != 0) return false;
    std::uint32_t first = 0;
    std::memcpy(&first, p, sizeof first);  // magic_ is T's first member
    return first == magic;
}

}  // namespace keel::cpu
