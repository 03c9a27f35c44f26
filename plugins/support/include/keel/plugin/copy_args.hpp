// The rules of keel.h's copy entries that do not depend on the device, so
// every plugin refuses the same copies with the same words.
#pragma once

#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstdint>
#include <string>

namespace keel::plugin {

// "0x7f3a00000000"
[[nodiscard]] std::string hex_addr(std::uint64_t addr);

// memcpy_d2d: INVALID_ARGUMENT, naming both, when the ranges overlap.
[[nodiscard]] Result<void> check_no_overlap(keel_device_addr dst, keel_device_addr src, std::uint64_t size);

// memcpy_h2d_inline: INVALID_ARGUMENT beyond KEEL_INLINE_COPY_MAX bytes.
[[nodiscard]] Result<void> check_inline_copy_size(std::uint64_t size);

}  // namespace keel::plugin
