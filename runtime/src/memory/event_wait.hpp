// Waiting for an event when memory is freed or handed back right after.
#pragma once

#include "memory/device_ops.hpp"

namespace keel::memory {

// Blocks until the work before `event` is over: completed, or skipped by a
// failed stream (then returns the stream's error). If event_synchronize
// itself fails, the work may still be running and touching memory the
// caller frees once this returns, so it polls event_query until the event
// completes or its query fails too.
[[nodiscard]] Result<void> wait_for_event(DeviceOps& ops, keel_event event);

}  // namespace keel::memory
