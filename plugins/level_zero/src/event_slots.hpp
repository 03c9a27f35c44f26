// Level Zero events for stream ordering and keel events, recycled.
//
// Every operation a stream enqueues signals one event (a "slot") when it
// completes; the next operation waits for it (stream.hpp explains why). A
// slot goes back to the pool, reset, only when its last reference is
// dropped: the stream's, every keel event recorded at it, and every
// operation that waits for it (held until that operation completed). So an
// event is never reset while anything may still wait for it, and re-recording
// a keel event never disturbs waits already enqueued on its older point.
#pragma once

#include <keel/result.hpp>

#include <level_zero/ze_api.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace keel::level_zero {

struct EventSlot {
    ze_event_handle_t event = nullptr;
};

// Shared ownership of a slot; the last owner returns it to its pool.
using SlotRef = std::shared_ptr<const EventSlot>;

// What a pool's events record besides their state.
enum class SlotKind {
    plain,
    // Kernel timestamps (ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP): the device
    // records when the command that signals the event started and ended,
    // read with zeEventQueryKernelTimestamp. Only for commands the device
    // signals: a host signal leaves the timestamps undefined.
    kernel_timestamp,
};

// Thread-safe. Events come from host-visible pools of one device (signal
// and wait scope: host), so the host may query, wait for and signal them.
class EventSlotPool {
public:
    EventSlotPool(ze_context_handle_t context, ze_device_handle_t device, SlotKind kind);
    EventSlotPool(const EventSlotPool&) = delete;
    EventSlotPool& operator=(const EventSlotPool&) = delete;
    EventSlotPool(EventSlotPool&&) = delete;
    EventSlotPool& operator=(EventSlotPool&&) = delete;
    ~EventSlotPool() = default;  // release_all() first: no Level Zero call here

    // An unsignalled slot: an idle one, or one of a new pool of 256.
    [[nodiscard]] Result<SlotRef> acquire();

    // Destroys every event and pool (plugin_shutdown, after every stream
    // and event was destroyed). Slots still referenced are not reused.
    void release_all() noexcept;

private:
    struct Core;
    std::shared_ptr<Core> core_;  // shared with the slots' deleters
};

}  // namespace keel::level_zero
