// What travels with the order between streams, kept per event and per
// stream handle in two tables: the cross-device origins a wait must bridge
// (cross_device/origins.hpp) and the fallible host functions it depends on
// (fallible_reach.hpp). A record, and the end of an event or a stream, tells
// both here, so that neither misses one.
//
// Threads: as the two tables' (any thread except a host function's).
#pragma once

#include "cross_device/origins.hpp"
#include "fallible_reach.hpp"

#include <keel/keel.h>

namespace keel::detail::ordering {

// `event` was just recorded on `stream`.
inline void event_recorded(keel_event event, keel_stream stream) {
    cross_device::event_recorded(event, stream);
    fallible::event_recorded(event, stream);
}

// `event` is destroyed, given back to a pool, or newly made (a handle the
// plugin reuses carries nothing).
inline void event_gone(keel_event event) noexcept {
    cross_device::event_gone(event);
    fallible::event_gone(event);
}

// `stream` closes (its work is done: nothing waits for a point of it any more).
inline void stream_gone(keel_stream stream) noexcept {
    cross_device::stream_gone(stream);
    fallible::stream_gone(stream);
}

}  // namespace keel::detail::ordering
