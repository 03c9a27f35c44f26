// Copies into device memory the way a DMA engine writes: with non-temporal
// stores that go to memory without first reading each line into the cache
// (a plain memcpy of a chunk below glibc's non-temporal threshold reads every
// destination line first, and evicts the source the host just staged).
#pragma once

#include <cstddef>

namespace keel::cpu {

// memcpy semantics (no overlap); falls back to memcpy for small sizes and
// where the target has no streaming stores.
void copy_streaming(std::byte* dst, const std::byte* src, std::size_t size) noexcept;

}  // namespace keel::cpu
