// Small text helpers for error messages.
#pragma once

#include <cstdint>
#include <string>

namespace keel::detail {

// "64 MiB (67108864 bytes)", or "100 bytes" below 1 KiB.
[[nodiscard]] std::string format_bytes(std::uint64_t bytes);

}  // namespace keel::detail
