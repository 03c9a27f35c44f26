// Patterns the checker writes into memory, so a test (or a person staring at
// a tensor) can tell where garbage came from.
#pragma once

#include <cstdint>

namespace keel::cpu::poison {

// Freed device memory: little-endian 32-bit words 0xDEADBEEF.
inline constexpr std::uint32_t kFreedDeviceWord = 0xDEADBEEFu;
// Freed pinned host memory: every byte 0xDB ("dead buffer").
inline constexpr std::uint8_t kFreedPinnedByte = 0xDB;
// Fresh device memory (allocated, never written): every byte 0xA5.
inline constexpr std::uint8_t kFreshDeviceByte = 0xA5;

}  // namespace keel::cpu::poison
