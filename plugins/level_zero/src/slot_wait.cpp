#include "slot_wait.hpp"

#include "ze_error.hpp"

#include <cstdint>
#include <thread>

namespace keel::level_zero {

bool device_lost(const EventSlot& slot) {
    for (int i = 0; i < 20; ++i) {
        if (!is_device_fatal(ze().zeEventQueryStatus(slot.event))) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

SlotWait wait_for_slot(const EventSlot& slot) {
    const ze_result_t first = ze().zeEventHostSynchronize(slot.event, UINT64_MAX);
    if (first == ZE_RESULT_SUCCESS) return SlotWait{true, std::nullopt};
    SlotWait outcome;
    Error last = ZeCall{"zeEventHostSynchronize", first}.error();
    if (is_device_fatal(first)) outcome.error = last;
    const auto deadline = std::chrono::steady_clock::now() + kGiveUpAfter;
    auto pause = std::chrono::microseconds(50);
    while (std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(5000));
        const ze_result_t state = ze().zeEventQueryStatus(slot.event);
        if (state == ZE_RESULT_SUCCESS) {
            outcome.completed = true;
            return outcome;
        }
        if (state == ZE_RESULT_NOT_READY) continue;
        last = ZeCall{"zeEventQueryStatus", state}.error();
        if (is_device_fatal(state)) {
            if (!outcome.error) outcome.error = last;
            // Lost: the device runs nothing more, so nothing touches memory.
            // One fatal answer may be a failed call, not a lost device.
            if (device_lost(slot)) return outcome;
        }
    }
    if (!outcome.error) outcome.error = last;
    return outcome;
}

}  // namespace keel::level_zero
