// Which plugin streams the runtime's Stream objects have open, each with a
// generation, so that a buffer freed after a stream it was recorded on was
// closed knows that stream's work is done (closing waits for it) instead of
// recording an event on a dead handle, even when the plugin reuses the
// handle for a new stream.
//
// Threads: Sync (one process-wide table behind a shared mutex).
#pragma once

#include <keel/keel.h>

#include <cstdint>

namespace keel::memory {

// 0: a handle the runtime did not open (a test's fake stream, a plugin
// stream driven through the C ABI): assumed open for as long as it is used.
using StreamGeneration = std::uint64_t;

// Called by Stream once the plugin created `stream`; returns its generation.
StreamGeneration register_stream(keel_stream stream);
// Called by Stream after the plugin destroyed `stream` (its work is done).
void unregister_stream(keel_stream stream) noexcept;
// The generation of `stream` if the runtime has it open, else 0.
[[nodiscard]] StreamGeneration stream_generation(keel_stream stream) noexcept;
// Whether the stream recorded with `generation` is still the open one.
[[nodiscard]] bool still_open(keel_stream stream, StreamGeneration generation) noexcept;

}  // namespace keel::memory
