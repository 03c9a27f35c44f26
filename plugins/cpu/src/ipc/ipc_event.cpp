#include "ipc_event.hpp"

#include "../address_space.hpp"

#include <keel/plugin/bounded_text.hpp>

#include <algorithm>
#include <cstring>
#include <new>

#include <unistd.h>

namespace keel::cpu::ipc {

Result<HandleBytes> read_event_handle(const keel_ipc_handle& handle);  // ipc_memory.cpp

Result<std::shared_ptr<SharedEvent>> SharedEvent::create() {
    KEEL_TRY_ASSIGN(Fd file, create_shared_file("keel-cpu-event", round_to_pages(sizeof(EventState))));
    KEEL_TRY_ASSIGN(Mapping m, map_shared(file.get(), 0, round_to_pages(sizeof(EventState))));
    auto* s = new (m.get()) EventState;
    s->magic = EventState::kMagic;
    s->uid = random_uid();
    s->exporter_pid = static_cast<std::int32_t>(::getpid());
    return std::make_shared<SharedEvent>(std::move(file), std::move(m), false);
}

Result<std::shared_ptr<SharedEvent>> SharedEvent::open(const keel_ipc_handle& handle) {
    KEEL_TRY_ASSIGN(HandleBytes b, read_event_handle(handle));
    KEEL_TRY_ASSIGN(std::uint64_t bytes, shared_file_size(handle.fd));
    if (bytes != round_to_pages(sizeof(EventState)))
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "the handle's descriptor " + std::to_string(handle.fd) +
                                                       " is not the shared state of an event");
    KEEL_TRY_ASSIGN(Fd file, duplicate(handle.fd));
    KEEL_TRY_ASSIGN(Mapping m, map_shared(file.get(), 0, bytes));
    const auto* s = reinterpret_cast<const EventState*>(m.get());
    if (s->magic != EventState::kMagic || s->uid != b.uid)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "the handle's descriptor does not hold the event it names");
    return std::make_shared<SharedEvent>(std::move(file), std::move(m), true);
}

Result<void> SharedEvent::export_handle(keel_ipc_handle* out) const {
    if (out == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "out is null");
    if (out->struct_size < KEEL_IPC_HANDLE_STRUCT_SIZE)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "out->struct_size " + std::to_string(out->struct_size) +
                                                       " is smaller than keel_ipc_handle of 1.6");
    if (imported_)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "an imported event: only its exporter exports it");
    KEEL_TRY_ASSIGN(Fd copy, duplicate(file_.get()));
    HandleBytes b;
    b.kind = KEEL_IPC_HANDLE_EVENT;
    b.exporter_pid = state().exporter_pid;
    b.uid = state().uid;
    out->kind = KEEL_IPC_HANDLE_EVENT;
    out->fd = copy.release();
    out->size = 0;
    out->byte_count = sizeof b;
    out->reserved = 0;
    std::memset(out->bytes, 0, sizeof out->bytes);
    std::memcpy(out->bytes, &b, sizeof b);
    return ok();
}

std::uint64_t SharedEvent::record(const std::function<void(std::uint64_t)>& describe) {
    std::lock_guard lock(record_mutex_);
    const std::uint64_t next = state().recorded.load(std::memory_order_relaxed) + 1;
    if (describe) describe(next);
    state().recorded.store(next, std::memory_order_release);
    return next;
}

void SharedEvent::complete(std::uint64_t record, const Error* error) noexcept {
    EventState& s = state();
    if (error != nullptr && s.failed_from.load(std::memory_order_acquire) == EventState::kNone) {
        s.error_code = static_cast<std::int32_t>(error->code());
        const std::string m = plugin::bounded_text(error->message(), sizeof s.error_message - 1);
        std::memcpy(s.error_message, m.data(), m.size());
        s.error_message[m.size()] = '\0';
        s.failed_from.store(record, std::memory_order_release);
    }
    if (s.completed.load(std::memory_order_relaxed) < record) s.completed.store(record, std::memory_order_release);
    s.wake.fetch_add(1, std::memory_order_acq_rel);
    shared_futex_wake_all(s.wake);
}

Result<void> SharedEvent::error_of(std::uint64_t record) const {
    const EventState& s = state();
    const std::uint64_t failed = s.failed_from.load(std::memory_order_acquire);
    if (failed == EventState::kNone || failed > record) return ok();
    return Error(static_cast<Status>(s.error_code),
                 "recorded in process " + std::to_string(s.exporter_pid) + " after its stream failed: " +
                     std::string(s.error_message));
}

Result<void> SharedEvent::wait(std::uint64_t record) const {
    EventState& s = state();
    constexpr std::uint64_t kCheckNs = 50'000'000;
    while (!done(record)) {
        const std::uint32_t seen = s.wake.load(std::memory_order_acquire);
        if (done(record)) break;
        shared_futex_wait_for(s.wake, seen, kCheckNs);
        if (!done(record) && !process_alive(s.exporter_pid))
            return Error(KEEL_STATUS_UNAVAILABLE, "the exporting process " + std::to_string(s.exporter_pid) +
                                                      " exited before record " + std::to_string(record) +
                                                      " of the interprocess event completed");
    }
    return error_of(record);
}

Publisher::~Publisher() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void Publisher::publish(std::shared_ptr<SharedEvent> event, std::uint64_t record, TimelinePoint point) {
    {
        std::lock_guard lock(mutex_);
        pending_.push_back(Pending{std::move(event), record, std::move(point)});
        if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    }
    wake_.notify_one();
}

void Publisher::run() {
    for (;;) {
        Pending p;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || !pending_.empty(); });
            if (pending_.empty()) return;  // stopping, nothing left
            p = std::move(pending_.front());
            pending_.pop_front();
        }
        if (p.point.timeline) p.point.timeline->wait_for(p.point.position);
        p.event->complete(p.record, p.point.error());
    }
}

}  // namespace keel::cpu::ipc
