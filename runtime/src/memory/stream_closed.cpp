#include "memory/stream_closed.hpp"

namespace keel::memory {

void stream_closed(MemoryCore& core, keel_stream stream) noexcept {
    // Tracker first: releasing holds may free buffers into the stream's pools.
    core.tracker().forget_stream(stream);
    core.allocator().stream_closed(stream);
}

}  // namespace keel::memory
