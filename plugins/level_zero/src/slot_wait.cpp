#include "slot_wait.hpp"

#include "ze_error.hpp"

#include <cstdint>
#include <thread>

namespace keel::level_zero {

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
            // Lost: the device runs nothing more, so nothing touches memory.
            if (!outcome.error) outcome.error = last;
            return outcome;
        }
    }
    if (!outcome.error) outcome.error = last;
    return outcome;
}

}  // namespace keel::level_zero
