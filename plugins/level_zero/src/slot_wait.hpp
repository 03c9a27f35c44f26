// Waiting on the host for a slot before memory the work before it touches
// is freed or reused, or before the work after it is released.
//
// One failed zeEventHostSynchronize says nothing about the work: an out of
// host memory answer is retried, and even a device-fatal answer is followed
// by queries until the slot completes or the device answers as lost (then
// it runs nothing more). So a caller may free once this returns, also when
// it returns an error: the only exception is a slot that stays pending for
// kGiveUpAfter after a failure (its signal never came), which is returned
// as an error with `completed` false.
#pragma once

#include "event_slots.hpp"

#include <keel/result.hpp>

#include <chrono>
#include <optional>

namespace keel::level_zero {

struct SlotWait {
    // The slot was seen signalled: the work before it is over. False when
    // the device is lost (nothing runs any more) or the wait gave up.
    bool completed = false;
    // A device-fatal answer seen on the way (the stream failed), or the
    // last error when it gave up; none when the slot simply completed.
    std::optional<Error> error;
};

inline constexpr std::chrono::seconds kGiveUpAfter{30};

[[nodiscard]] SlotWait wait_for_slot(const EventSlot& slot);

// Whether the device answers every status query of `slot` as lost, over
// about 20 ms (a single device-fatal answer may be one failed call).
[[nodiscard]] bool device_lost(const EventSlot& slot);

}  // namespace keel::level_zero
