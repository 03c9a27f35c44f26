// The points of other plugins' streams that a stream, or an event's most
// recent record, is ordered after through bridged waits (bridge.hpp).
//
// A bridge orders two streams with host functions that no plugin can see,
// so a plugin that tracks ordering itself (the CPU plugin's race checker)
// would miss an edge that passes through another plugin's stream: cpu:0
// work -> a level_zero:0 stream (bridged) -> its event -> a second cpu:0
// stream (bridged). So every bridge leaves, on the waiting stream, an event
// recorded at the awaited point (an origin), and origins travel with the
// ordering: into events and fences recorded on the stream, along later
// waits and bridges. When origins reach a stream whose plugin can wait for them
// natively, it does (after the bridge, so the wait is already satisfied
// and costs no time), and the plugin sees the edge; the others are kept.
//
// Ownership: an origin owns its point, a plugin event of its own (with a
// share of the plugin, as an Event), and refers to nothing else: dropping
// one destroys that event ([event.destroy-pending] lets a pending one go)
// and never touches its stream, the stream's memory instance or a
// thread's state, so an origin may go anywhere and at any time (another
// stream's close, a helper's retirement, the process's exit) whether or
// not its stream is still open. A stream handle in an origin is a key only.
//
// Kept per stream handle and per event handle, latest point per origin
// stream; a stream's origins go when it closes, as does every origin at a
// point of it (its work is done: memory, not correctness). Until the first
// bridge every call is a no-op behind one relaxed load (in_use()).
//
// Sync: every function may be called from any thread except a host
// function. No lock is held while a plugin is called or an origin goes.
#pragma once

#include <keel/event.hpp>
#include <keel/keel.h>
#include <keel/result.hpp>

#include "../plugin.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace keel::cross_device {

// A point of one stream's work: an event recorded there, owned.
struct Origin {
    keel_stream stream = nullptr;         // whose point (a key: never called through)
    std::shared_ptr<const Event> point;  // keeps its plugin, and so its device slot, alive
    std::uint64_t order = 0;             // later points of one stream have larger values
};
using Origins = std::vector<Origin>;

// False until the first origin was made (by a bridge).
[[nodiscard]] bool origins_in_use() noexcept;

// An event recorded at the current end of `from`'s work, as an origin. The
// caller holds a Device of `from_dev`'s plugin.
[[nodiscard]] Result<Origin> make_origin(const detail::DeviceSlot& from_dev, keel_stream from);

[[nodiscard]] Origins origins_of_stream(keel_stream stream);
[[nodiscard]] Origins origins_of_event(keel_event event);

// `event` was just recorded on `stream`: its record carries the stream's origins.
void event_recorded(keel_event event, keel_stream stream);
// `event` is destroyed or given back to a pool.
void event_gone(keel_event event) noexcept;
// What `stream` was ordered after is forgotten (a helper stream between two
// users: its next user needs none of it, and helpers live until their
// plugin goes, so what they kept would keep other plugins' memory alive).
void forget_stream_origins(keel_stream stream) noexcept;
// `stream` closes (its work is done): its origins go, and every origin at a
// point of it.
void stream_gone(keel_stream stream) noexcept;

// Work enqueued on `to` (of `to_dev`) from now on is ordered after
// `incoming`: waits natively for those its plugin can wait for, keeps the
// rest. An error is that of a native wait the plugin refused.
[[nodiscard]] Result<void> arrive(const detail::DeviceSlot& to_dev, keel_stream to, Origins incoming);

}  // namespace keel::cross_device
