// Ordering across devices: a stream of one device waits for work of
// another, and the enqueuing thread never blocks.
//
// Natively where the plugin says it can (one plugin, both devices with
// KEEL_DEVICE_CAP_PEER_EVENT_WAIT, ABI 1.6): a plain stream_wait_event.
// Otherwise (two plugins, an older minor, no capability) with a gate: a host
// function where the awaited work ends opens it, and a host function on the
// waiting stream waits for it. The error travels with the gate: when the
// awaited work failed, the waiting stream fails at that point with the
// error's code (where its plugin lets host functions fail, ABI 1.4; else it
// is logged), as ABI 1.3's error propagation asks of a native wait.
//
// A bridge is invisible to the plugins, so the points it orders after
// travel on as origins (origins.hpp): a plugin that tracks ordering (the
// CPU checker) then sees an edge that passed through another plugin.
//
// A bridged wait holds back the waiting stream's host-function thread until
// the awaited work is done: on plugins that run host functions of several
// streams on one thread, those streams wait too (never a deadlock: the
// awaited work was enqueued before the wait, so it depends on nothing
// enqueued after it).
#pragma once

#include "../memory/memory_core.hpp"
#include "../plugin.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <memory>

namespace keel::cross_device {

// Whether a stream of `waiter` waits natively for events of `source`.
[[nodiscard]] bool native_wait(const detail::DeviceSlot& waiter, const detail::DeviceSlot& source) noexcept;

// Work enqueued on `to` (a stream of `to_dev`) after this call runs after
// everything enqueued on `from` (of `from_dev`, whose memory instance is
// `from_core`) so far. `from` may be of the same device (a plain fence).
[[nodiscard]] Result<void> order_after(const detail::DeviceSlot& to_dev, keel_stream to,
                                       const detail::DeviceSlot& from_dev, keel_stream from,
                                       const std::shared_ptr<memory::MemoryCore>& from_core);

// Work enqueued on `to` (of `to_dev`) after this call runs after the most
// recent record of `event` (of `event_dev`) as of this call; `event` may be
// re-recorded or destroyed as soon as this returns.
[[nodiscard]] Result<void> wait_event(const detail::DeviceSlot& to_dev, keel_stream to,
                                      const detail::DeviceSlot& event_dev, keel_event event);

}  // namespace keel::cross_device
