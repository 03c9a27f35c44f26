// What travels with the order between streams, kept per event and per
// stream handle in two tables: the cross-device origins a wait must bridge
// (cross_device/origins.hpp) and the fallible host functions it depends on
// (fallible_reach.hpp). A record, a wait that the plugin ordered, and the
// end of an event or a stream tell both here, so that neither misses one.
//
// Threads: as the two tables' (any thread except a host function's).
#pragma once

#include "cross_device/origins.hpp"
#include "fallible_reach.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <utility>

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

// `to` (of `to_dev`) now waits, through its plugin, for `event`'s most
// recent record, whose origins were `carried` when the wait was enqueued.
[[nodiscard]] inline Result<void> arrived_from_event(const DeviceSlot& to_dev, keel_stream to, keel_event event,
                                                     cross_device::Origins carried) {
    KEEL_TRY(fallible::arrive_from_event(to, event));
    return cross_device::arrive(to_dev, to, std::move(carried));
}

// ... for `from`'s work enqueued so far, whose origins were `carried`.
[[nodiscard]] inline Result<void> arrived_from_stream(const DeviceSlot& to_dev, keel_stream to, keel_stream from,
                                                      cross_device::Origins carried) {
    KEEL_TRY(fallible::arrive_from_stream(to, from));
    return cross_device::arrive(to_dev, to, std::move(carried));
}

// `stream` closes (its work is done: nothing waits for a point of it any more).
inline void stream_gone(keel_stream stream) noexcept {
    cross_device::stream_gone(stream);
    fallible::stream_gone(stream);
}

}  // namespace keel::detail::ordering
