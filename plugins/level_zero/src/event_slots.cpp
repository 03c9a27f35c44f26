#include "event_slots.hpp"

#include "ze_error.hpp"

#include <utility>

namespace keel::level_zero {

namespace {
constexpr std::uint32_t kEventsPerPool = 256;
}

struct EventSlotPool::Core {
    struct Chunk {
        ze_event_pool_handle_t pool = nullptr;
        std::unique_ptr<EventSlot[]> slots;
    };

    ze_context_handle_t context;
    ze_device_handle_t device;
    SlotKind kind;
    std::mutex mutex;
    std::vector<Chunk> chunks;        // guarded by mutex
    std::vector<EventSlot*> idle;     // guarded by mutex; unsignalled
    bool closed = false;              // guarded by mutex

    Result<void> grow();  // caller holds mutex
    void recycle(EventSlot* slot) noexcept;
};

Result<void> EventSlotPool::Core::grow() {
    Chunk chunk;
    chunk.slots = std::make_unique<EventSlot[]>(kEventsPerPool);
    ze_event_pool_flags_t flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
    if (kind == SlotKind::kernel_timestamp) flags |= ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP;
    ze_event_pool_desc_t pool_desc{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, flags, kEventsPerPool};
    KEEL_TRY(KEEL_ZE(zeEventPoolCreate, context, &pool_desc, 1, &device, &chunk.pool).check());
    for (std::uint32_t i = 0; i < kEventsPerPool; ++i) {
        ze_event_desc_t desc{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, i, ZE_EVENT_SCOPE_FLAG_HOST,
                             ZE_EVENT_SCOPE_FLAG_HOST};
        const ZeCall made = KEEL_ZE(zeEventCreate, chunk.pool, &desc, &chunk.slots[i].event);
        if (!made.ok()) {
            for (std::uint32_t j = 0; j < i; ++j) (void)ze().zeEventDestroy(chunk.slots[j].event);
            (void)ze().zeEventPoolDestroy(chunk.pool);
            return made.error();
        }
    }
    for (std::uint32_t i = 0; i < kEventsPerPool; ++i) idle.push_back(&chunk.slots[i]);
    chunks.push_back(std::move(chunk));
    return ok();
}

void EventSlotPool::Core::recycle(EventSlot* slot) noexcept {
    {
        std::lock_guard lock(mutex);
        if (closed) return;
    }
    // Nothing references the slot any more: no operation waits for it or
    // will signal it, so resetting it cannot disturb anyone. A slot whose
    // reset fails (device lost) is not reused.
    if (ze().zeEventHostReset(slot->event) != ZE_RESULT_SUCCESS) return;
    try {
        std::lock_guard lock(mutex);
        if (!closed) idle.push_back(slot);
    } catch (...) {
        // Out of host memory: the slot is simply not reused.
    }
}

EventSlotPool::EventSlotPool(ze_context_handle_t context, ze_device_handle_t device, SlotKind kind)
    : core_(std::make_shared<Core>()) {
    core_->context = context;
    core_->device = device;
    core_->kind = kind;
}

Result<SlotRef> EventSlotPool::acquire() {
    EventSlot* slot = nullptr;
    {
        std::lock_guard lock(core_->mutex);
        if (core_->closed) return Error(KEEL_STATUS_INTERNAL, "event pool used after plugin_shutdown");
        if (core_->idle.empty()) KEEL_TRY(core_->grow());
        slot = core_->idle.back();
        core_->idle.pop_back();
    }
    // The deleter recycles the slot, also when making the shared_ptr itself
    // throws (std::shared_ptr calls it then).
    std::shared_ptr<Core> core = core_;
    return SlotRef(slot, [core](const EventSlot* s) { core->recycle(const_cast<EventSlot*>(s)); });
}

void EventSlotPool::release_all() noexcept {
    std::vector<Core::Chunk> chunks;
    {
        std::lock_guard lock(core_->mutex);
        core_->closed = true;
        core_->idle.clear();
        chunks.swap(core_->chunks);
    }
    for (Core::Chunk& chunk : chunks) {
        for (std::uint32_t i = 0; i < kEventsPerPool; ++i) (void)ze().zeEventDestroy(chunk.slots[i].event);
        (void)ze().zeEventPoolDestroy(chunk.pool);
    }
}

}  // namespace keel::level_zero
