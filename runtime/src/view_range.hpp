// The bounds check of every sub-range of a view or buffer.
#pragma once

#include <keel/result.hpp>

#include <cstdint>
#include <string>

namespace keel::detail {

// OUT_OF_RANGE unless [offset, offset + size) lies within `total` bytes.
[[nodiscard]] inline Result<void> check_range(const char* where, std::uint64_t offset, std::uint64_t size,
                                              std::uint64_t total) {
    if (offset > total || size > total - offset)
        return Error(KEEL_STATUS_OUT_OF_RANGE,
                     std::string("[") + where + "] range [" + std::to_string(offset) + ", " +
                         std::to_string(offset) + " + " + std::to_string(size) +
                         ") does not fit a view of " + std::to_string(total) + " bytes");
    return ok();
}

}  // namespace keel::detail
