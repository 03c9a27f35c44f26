// Checker annotations (keel.h 1.3, stream_annotate_range): what a caching
// allocator knows and the plugin cannot see. The entry is in the table only
// when the checker is on (absent otherwise: the runtime then tells nothing).
//
//   KEEL_RANGE_RELEASED: the block's buffer was freed and the block went
//       back to the allocator's cache. From now on any access enqueued to it
//       is a use after free (a stale view), until KEEL_RANGE_ACQUIRED.
//       Releasing a released byte again is a double free.
//   KEEL_RANGE_ACQUIRED: the allocator handed the block to a new owner. Its
//       access history is kept, so a new owner on another stream that is not
//       ordered after the old owner's last use is reported as a race by its
//       first access.
#pragma once

#include <keel/keel.h>

#include <string_view>

namespace keel::cpu {

// How findings name the two annotations.
inline constexpr std::string_view kReleaseRange = "stream_annotate_range(RELEASED)";
inline constexpr std::string_view kAcquireRange = "stream_annotate_range(ACQUIRED)";

}  // namespace keel::cpu

namespace keel::cpu::entries {

keel_error* stream_annotate_range(keel_stream stream, keel_range_annotation what, keel_device_addr addr,
                                  uint64_t size);

}  // namespace keel::cpu::entries
