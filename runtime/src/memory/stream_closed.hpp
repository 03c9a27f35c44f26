// What a memory instance lets go of when one of its streams closes.
#pragma once

#include "memory/memory_core.hpp"

#include <keel/keel.h>

namespace keel::memory {

// Called by Stream::close once the stream's work is done and it left the
// registry, before the plugin destroys the handle: the tracker releases and
// forgets what the stream tracked, then the allocator returns the stream's
// free cached segments to the plugin (and later ones as they become free).
void stream_closed(MemoryCore& core, keel_stream stream) noexcept;

}  // namespace keel::memory
