// Holds: keep objects alive until a stream reaches a point, without the host
// waiting.
//
// hold(core, stream, x...) records one pooled event on `stream` and gives the
// objects to the completion tracker; once the event is seen complete, a
// later sweep (any call into the memory machinery, the reclaimer thread, or
// an explicit sweep) destroys them on that host thread, many at a time. No
// host callback is enqueued: a callback per operation costs about 100 us of
// stream latency on real GPUs and could not call into the plugin anyway.
//
// This is how a pipeline keeps a buffer alive until the send that reads it
// has finished, without synchronising after the send.
#pragma once

#include <keel/host_func.hpp>
#include "memory/memory_core.hpp"

#include <utility>

namespace keel::memory {

// Keeps what `release` captures alive until `stream` reaches this point. If
// no event can be recorded, waits for the stream before releasing (never
// early) and returns the error.
[[nodiscard]] Result<void> hold_task(MemoryCore& core, keel_stream stream, HostFunc release);

// Takes ownership of `objects` (move them in; copyable ones such as a
// std::shared_ptr are copied, keeping one more reference) and destroys them
// once `stream` reaches this point. They are destroyed on a host thread that
// sweeps, so they must be destructible on any thread (Send).
template <class... T>
[[nodiscard]] Result<void> hold(MemoryCore& core, keel_stream stream, T&&... objects) {
    static_assert(sizeof...(T) > 0, "hold() needs at least one object");
    return hold_task(core, stream, keel::detail::owning(std::forward<T>(objects)...));
}

}  // namespace keel::memory
