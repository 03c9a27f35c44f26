// A text cut to a bound the way every plugin cuts one (an error message
// that crosses to another process in a fixed-size slot): whole characters
// only, and "..." where it was cut, so a reader sees it is not all of it.
// Pure: thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace keel::plugin {

// `text` up to its first zero byte; when longer than `max_bytes`, cut at a
// UTF-8 character boundary and ended with "...", `max_bytes` bytes at most
// (only as much of "..." as fits when `max_bytes` < 3).
[[nodiscard]] std::string bounded_text(std::string_view text, std::size_t max_bytes);

}  // namespace keel::plugin
