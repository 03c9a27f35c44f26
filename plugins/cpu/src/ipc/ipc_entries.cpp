// The IPC entries of keel.h 1.6 and the interprocess side of events.
#include "ipc_entries.hpp"

#include "../checker/checker.hpp"
#include "../device.hpp"
#include "../event.hpp"
#include "../stream.hpp"
#include "ipc_device.hpp"

#include <keel/c_error.hpp>
#include <keel/plugin/boundary.hpp>

#include <memory>

namespace keel::cpu {
namespace ipc {

Result<void> make_interprocess(Event& e, std::uint32_t flags) {
    if ((flags & KEEL_EVENT_INTERPROCESS) == 0) return ok();
    if ((flags & KEEL_EVENT_TIMING) != 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "an interprocess event has no timing (KEEL_EVENT_TIMING)");
    KEEL_TRY_ASSIGN(e.shared, SharedEvent::create());
    return ok();
}

bool is_imported(const Event& e) noexcept { return e.shared && e.shared->imported(); }

Result<void> after_record(Event& e) {
    const Event::Record r = e.get();
    Checker* checker = e.device().checker();
    SharedEvent& shared = *e.shared;
    const std::uint64_t record = shared.record([&](std::uint64_t n) {
        if (checker != nullptr) checker->ipc_cover(r.clock, shared.state(), n);
    });
    e.device().ipc().publisher.publish(e.shared, record, r.point);
    return ok();
}

namespace {

struct WaitTask {
    std::shared_ptr<SharedEvent> event;
    std::uint64_t record = 0;
};

// Runs on the waiting stream's worker: a failed stream still orders its
// waits (keel.h 1.3), and the exporter's error fails this stream.
keel_error* wait_on_worker(void* user_data, keel_status) {
    std::unique_ptr<WaitTask> task(static_cast<WaitTask*>(user_data));
    Result<void> r = task->event->wait(task->record);
    if (r.ok()) return nullptr;
    return make_c_error(r.error().code(), "[cpu stream_wait_event] " + r.error().message());
}

void learn(Event& e, std::uint64_t record) {
    if (Checker* checker = e.device().checker()) checker->ipc_learn(e.shared->state(), record);
}

}  // namespace

Result<void> wait_imported(Stream& s, Event& e) {
    const std::uint64_t record = e.shared->latest();
    if (record == 0) return ok();  // never recorded: complete
    learn(e, record);
    if (e.shared->done(record)) {
        Result<void> failed = e.shared->error_of(record);
        if (failed.ok()) return ok();
    }
    auto task = std::make_unique<WaitTask>(WaitTask{e.shared, record});
    KEEL_TRY(s.enqueue([&](Op& op) {
        op.kind = OpKind::host_func;
        op.fn = nullptr;
        op.fallible_fn = &wait_on_worker;
        op.user_data = task.get();
    }));
    task.release();  // the worker owns it now
    return ok();
}

Result<bool> query_imported(Event& e) {
    const std::uint64_t record = e.shared->latest();
    if (!e.shared->done(record)) return false;
    KEEL_TRY(e.shared->error_of(record));
    learn(e, record);
    return true;
}

Result<void> synchronize_imported(Event& e) {
    const std::uint64_t record = e.shared->latest();
    KEEL_TRY(e.shared->wait(record));
    learn(e, record);
    return ok();
}

}  // namespace ipc

namespace entries {

keel_error* ipc_memory_alloc(keel_device device, uint64_t size, keel_device_addr* out_addr) {
    return plugin::entry("cpu ipc_memory_alloc", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, Device::from(device));
        KEEL_TRY(plugin::require_non_null(out_addr, "out_addr"));
        if (d->checker() != nullptr) KEEL_TRY(d->checker()->before_alloc("device"));
        KEEL_TRY_ASSIGN(keel_device_addr addr, d->ipc().memory.allocate(size, d->next_allocation_id()));
        *out_addr = addr;
        return ok();
    });
}

keel_error* ipc_memory_export(keel_device device, keel_device_addr addr, keel_ipc_handle* out) {
    return plugin::entry("cpu ipc_memory_export", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, Device::from(device));
        return d->ipc().memory.export_handle(addr, out);
    });
}

keel_error* ipc_memory_import(keel_device device, const keel_ipc_handle* handle, keel_device_addr* out_addr) {
    return plugin::entry("cpu ipc_memory_import", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, Device::from(device));
        KEEL_TRY(plugin::require_non_null(handle, "handle"));
        KEEL_TRY(plugin::require_non_null(out_addr, "out_addr"));
        KEEL_TRY_ASSIGN(keel_device_addr addr, d->ipc().memory.import(*handle, d->next_allocation_id()));
        *out_addr = addr;
        return ok();
    });
}

keel_error* ipc_memory_close(keel_device device, keel_device_addr addr) {
    return plugin::entry("cpu ipc_memory_close", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, Device::from(device));
        return d->ipc().memory.close(addr);
    });
}

keel_error* ipc_event_export(keel_event event, keel_ipc_handle* out) {
    return plugin::entry("cpu ipc_event_export", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * e, Event::from(event));
        if (!e->shared)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "the event was not created with KEEL_EVENT_INTERPROCESS");
        return e->shared->export_handle(out);
    });
}

keel_error* ipc_event_import(keel_device device, const keel_ipc_handle* handle, keel_event* out_event) {
    return plugin::entry("cpu ipc_event_import", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, Device::from(device));
        KEEL_TRY(plugin::require_non_null(handle, "handle"));
        KEEL_TRY(plugin::require_non_null(out_event, "out_event"));
        KEEL_TRY_ASSIGN(std::shared_ptr<ipc::SharedEvent> shared, ipc::SharedEvent::open(*handle));
        KEEL_TRY_ASSIGN(Event * e, d->create_event(KEEL_EVENT_DEFAULT));
        e->shared = std::move(shared);
        *out_event = e->handle();
        return ok();
    });
}

}  // namespace entries
}  // namespace keel::cpu
