// Fences over a core and plugin stream handles: what Stream::fence, wait and
// order_after do once the streams are checked, and what the memory tests
// call with a fake device. keel/fence.hpp says when to use a fence and when
// an event.
#pragma once

#include <keel/fence.hpp>

#include "memory/memory_core.hpp"

#include <memory>

namespace keel::memory {

// Captures the work enqueued on `from` so far.
[[nodiscard]] Result<Fence> record_fence(const std::shared_ptr<MemoryCore>& core, keel_stream from);

// Work enqueued on `to` after this call runs after the fence's point. The
// host does not block. Nothing for an empty fence.
[[nodiscard]] Result<void> wait_fence(const Fence& fence, keel_stream to);

// One-shot fence: work enqueued on `to` from now on runs after everything
// enqueued on `from` so far. The host does not block.
[[nodiscard]] Result<void> order_after(const std::shared_ptr<MemoryCore>& core, keel_stream to,
                                       keel_stream from);

}  // namespace keel::memory
