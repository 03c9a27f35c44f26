// format_bytes: a byte count for people ("12.0 MiB", "100 B"), as keel's
// statistics and error messages print it.
#pragma once

#include <keel/export.hpp>

#include <cstdint>
#include <string>

namespace keel {

[[nodiscard]] KEEL_API std::string format_bytes(std::uint64_t bytes);

}  // namespace keel
