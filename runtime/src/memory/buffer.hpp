// Buffers of the caching allocator over a core and a plugin stream handle:
// what Buffer::allocate and record_stream do once the Stream is checked, and
// what the memory tests call with a fake device.
#pragma once

#include <keel/buffer.hpp>

#include "memory/memory_core.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <source_location>
#include <vector>

namespace keel::memory {

// `size` > 0 bytes for use on `stream`, which owns the block.
// `where`: the caller's site, for the memory history (trace/history.hpp).
[[nodiscard]] Result<Buffer> allocate(const std::shared_ptr<MemoryCore>& core, keel_stream stream,
                                      std::uint64_t size,
                                      std::source_location where = std::source_location::current());

// Declares that the work enqueued on `stream` so far uses `buffer` (see
// Buffer::record_stream); `generation` as BlockAllocator::record_use.
[[nodiscard]] Result<void> record_use(Buffer& buffer, keel_stream stream,
                                      std::optional<StreamGeneration> generation = std::nullopt);

// Record_stream with a stream of another device: remembered, and turned at
// the free into an order of the block's own stream after that stream's
// work so far (order_foreign_uses), so the block is reused only after it.
[[nodiscard]] Result<void> record_foreign_use(Buffer& buffer, const Stream& stream);
// At the free: orders the block's own stream after every foreign use still
// open (or waits for it when the block's stream is closed) and removes them.
void order_foreign_uses(MemoryCore& core, const Block* block, std::vector<RecordedUse>& uses) noexcept;

}  // namespace keel::memory
