#include "memory/event_wait.hpp"

#include <chrono>
#include <thread>

namespace keel::memory {

Result<void> wait_for_event(DeviceOps& ops, keel_event event) {
    auto waited = ops.event_synchronize(event);
    if (waited.ok()) return waited;
    for (;;) {
        auto done = ops.event_query(event);
        if (!done.ok() || *done) break;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return waited;
}

}  // namespace keel::memory
