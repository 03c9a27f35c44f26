// Event pools and events. The host may only touch events of host-visible
// pools; an event must not be reset or destroyed while a pending command
// waits for it or will signal it.
#include "api.hpp"
#include "fake.hpp"
#include "ipc_events.hpp"

#include <chrono>

namespace fake_ze::api {

namespace {

Event* event_of(ze_event_handle_t handle) { return from_handle<Event>(handle); }

void require_host_visible(const Event& e, const char* function) {
    if ((e.pool->flags & ZE_EVENT_POOL_FLAG_HOST_VISIBLE) == 0)
        violation(std::string(function) + " on an event of a pool created without ZE_EVENT_POOL_FLAG_HOST_VISIBLE");
}

bool has_kernel_timestamps(const Event& e) { return (e.pool->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP) != 0; }

void forget_timestamps(Event& e) {
    e.timestamps = {{kUndefinedTimestamp, kUndefinedTimestamp}, {kUndefinedTimestamp, kUndefinedTimestamp}};
}

void require_idle(const Event& e, const char* function) {
    if (e.waiters != 0 || e.signallers != 0)
        violation(std::string(function) + " of an event that " + std::to_string(e.waiters) +
                  " pending command(s) wait for and " + std::to_string(e.signallers) + " will signal");
}

}  // namespace

ze_result_t ZE_APICALL zeEventPoolCreate(ze_context_handle_t context, const ze_event_pool_desc_t* desc,
                                         uint32_t device_count, ze_device_handle_t* devices,
                                         ze_event_pool_handle_t* pool) {
    FAKE_ZE_INJECT("zeEventPoolCreate");
    if (context == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (desc == nullptr || pool == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->count == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
    if (desc->flags > 0x7) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if ((desc->flags & ZE_EVENT_POOL_FLAG_IPC) != 0 && (desc->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP) != 0)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // the specification forbids the pair
    if (device_count > 0 && devices == nullptr) return ZE_RESULT_ERROR_INVALID_SIZE;
    auto p = std::make_unique<EventPool>();
    p->context = from_handle<Context>(context);
    p->flags = desc->flags;
    p->events.assign(desc->count, nullptr);
    for (uint32_t i = 0; i < device_count; ++i) p->devices.push_back(from_handle<Device>(devices[i]));
    if ((desc->flags & ZE_EVENT_POOL_FLAG_IPC) != 0) {
        p->shared = make_shared_states(desc->count);
        if (!p->shared) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    ++p->context->objects;
    ++driver.live;
    *pool = to_handle<ze_event_pool_handle_t>(p.release());
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeEventPoolDestroy(ze_event_pool_handle_t handle) {
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (from_handle<EventPool>(handle)->opened) return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // zeEventPoolCloseIpcHandle
    std::unique_ptr<EventPool> p(from_handle<EventPool>(handle));
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    if (p->live != 0) violation("zeEventPoolDestroy with " + std::to_string(p->live) + " of its events alive");
    --p->context->objects;
    --driver.live;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeEventCreate(ze_event_pool_handle_t pool_handle, const ze_event_desc_t* desc,
                                     ze_event_handle_t* event) {
    FAKE_ZE_INJECT("zeEventCreate");
    if (pool_handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (desc == nullptr || event == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    EventPool* pool = from_handle<EventPool>(pool_handle);
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    if (desc->index >= pool->events.size()) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (pool->events[desc->index] != nullptr) violation("zeEventCreate of an index already in use");
    auto e = std::make_unique<Event>();
    e->pool = pool;
    e->index = desc->index;
    if (pool->shared) {
        // Created unsignalled by its pool's creator; an opened pool's event
        // shows the state the exporter's event has.
        e->shared = &pool->shared->words[desc->index];
        if (!pool->opened) e->shared->store(0, std::memory_order_release);
    }
    pool->events[desc->index] = e.get();
    ++pool->live;
    ++driver.live;
    *event = to_handle<ze_event_handle_t>(e.release());
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeEventDestroy(ze_event_handle_t handle) {
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    std::unique_ptr<Event> e(event_of(handle));
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    require_idle(*e, "zeEventDestroy");
    e->pool->events[e->index] = nullptr;
    --e->pool->live;
    --driver.live;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeEventHostSignal(ze_event_handle_t handle) {
    FAKE_ZE_INJECT("zeEventHostSignal");
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    Event* e = event_of(handle);
    Driver& driver = Driver::get();
    {
        std::lock_guard lock(driver.mutex);
        require_host_visible(*e, "zeEventHostSignal");
        if (driver.lost_for(*e)) return ZE_RESULT_ERROR_DEVICE_LOST;
        set_signalled(*e, true);
        forget_timestamps(*e);  // a host signal's timestamps are undefined
    }
    driver.changed.notify_all();
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeEventHostSynchronize(ze_event_handle_t handle, uint64_t timeout_ns) {
    FAKE_ZE_INJECT("zeEventHostSynchronize");
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    Event* e = event_of(handle);
    Driver& driver = Driver::get();
    std::unique_lock lock(driver.mutex);
    require_host_visible(*e, "zeEventHostSynchronize");
    const auto done = [&] { return is_signalled(*e) || driver.lost_for(*e); };
    if (e->shared != nullptr) {
        const auto deadline = timeout_ns >= (UINT64_MAX >> 2)
                                  ? std::chrono::steady_clock::time_point::max()
                                  : std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
        wait_shared(*e, lock, deadline);
    } else if (timeout_ns == UINT64_MAX) {
        driver.changed.wait(lock, done);
    } else {
        driver.changed.wait_for(lock, std::chrono::nanoseconds(timeout_ns), done);
    }
    if (is_signalled(*e)) return ZE_RESULT_SUCCESS;
    return driver.lost_for(*e) ? ZE_RESULT_ERROR_DEVICE_LOST : ZE_RESULT_NOT_READY;
}

ze_result_t ZE_APICALL zeEventQueryStatus(ze_event_handle_t handle) {
    FAKE_ZE_INJECT("zeEventQueryStatus");
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    Event* e = event_of(handle);
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    require_host_visible(*e, "zeEventQueryStatus");
    if (is_signalled(*e)) return ZE_RESULT_SUCCESS;
    return driver.lost_for(*e) ? ZE_RESULT_ERROR_DEVICE_LOST : ZE_RESULT_NOT_READY;
}

ze_result_t ZE_APICALL zeEventHostReset(ze_event_handle_t handle) {
    FAKE_ZE_INJECT("zeEventHostReset");
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    Event* e = event_of(handle);
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    require_host_visible(*e, "zeEventHostReset");
    require_idle(*e, "zeEventHostReset");
    set_signalled(*e, false);
    forget_timestamps(*e);
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeEventQueryKernelTimestamp(ze_event_handle_t handle, ze_kernel_timestamp_result_t* out) {
    FAKE_ZE_INJECT("zeEventQueryKernelTimestamp");
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (out == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    Event* e = event_of(handle);
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    if (!has_kernel_timestamps(*e))
        violation("zeEventQueryKernelTimestamp on an event of a pool created without ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP");
    if (!is_signalled(*e)) return driver.lost_for(*e) ? ZE_RESULT_ERROR_DEVICE_LOST : ZE_RESULT_NOT_READY;
    *out = e->timestamps;
    return ZE_RESULT_SUCCESS;
}

}  // namespace fake_ze::api
