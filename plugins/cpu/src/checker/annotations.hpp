// Checker annotations: what a caching allocator knows and the plugin cannot
// see, told through the existing ABI (no change to keel.h, no new symbol):
// two pseudo-kernels, found by kernel_get only when the checker is on
// (NOT_FOUND otherwise: the capability is absent), each taking one buffer
// argument (any dtype) naming a block inside a live device allocation.
// Launching one enqueues nothing; it takes effect at the call.
//
//   keel.checker.release_range(block): the block's buffer was freed and the
//       block went back to the allocator's cache. From now on any access
//       enqueued to it is a use after free (a stale view), until
//       acquire_range. Releasing a released byte again is a double free.
//   keel.checker.acquire_range(block): the allocator handed the block to a
//       new owner. Its access history is kept, so a new owner on another
//       stream that is not ordered after the old owner's last use is
//       reported as a race by its first access.
#pragma once

#include "../kernel_registry.hpp"

#include <keel/result.hpp>

#include <string_view>

namespace keel::cpu {

class Checker;
class Stream;

inline constexpr std::string_view kReleaseRange = "keel.checker.release_range";
inline constexpr std::string_view kAcquireRange = "keel.checker.acquire_range";

[[nodiscard]] const KernelDef* find_annotation(std::string_view name) noexcept;
[[nodiscard]] bool is_annotation(const void* p) noexcept;
// Validates the launch and applies the annotation to the checker.
[[nodiscard]] Result<void> annotate(Checker& checker, Stream& stream, const KernelDef& def,
                                    const plugin::LaunchArgsView& args);

}  // namespace keel::cpu
