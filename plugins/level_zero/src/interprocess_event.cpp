#include "interprocess_event.hpp"

#include "ze_error.hpp"

#include <keel/plugin/boundary.hpp>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace keel::level_zero {

namespace {

constexpr std::uint32_t kDone = 0;
constexpr std::uint32_t kFailed = 1;
constexpr std::uint32_t kCodeFirst = 2;
constexpr std::uint32_t kCodeBits = 4;
constexpr std::uint32_t kMessage = 6;
constexpr std::uint32_t kTextFirst = InterprocessEvent::kEvents;
static_assert(kCodeFirst + kCodeBits == kMessage && kMessage + 1 == kTextFirst, "the layout of interprocess_event.hpp");
static_assert(KEEL_STATUS_INTERNAL < (1u << kCodeBits), "every status code fits the code bits");
static_assert(ZE_MAX_IPC_HANDLE_SIZE <= KEEL_IPC_HANDLE_MAX_BYTES);

// How often a wait for another process's record checks that it still exists.
constexpr std::uint64_t kLivenessCheckNs = 50'000'000;

// Where the descriptor lives in ze_ipc_event_pool_handle_t::data on Linux.
// In transit those bytes carry the exporter's process id instead: the
// number of a descriptor means nothing in another process.
std::int32_t first_word(const void* data) {
    std::int32_t v = -1;
    std::memcpy(&v, data, sizeof v);
    return v;
}
void put_first_word(void* data, std::int32_t v) { std::memcpy(data, &v, sizeof v); }

// False once `pid` exited (a zombie included): its records never complete.
bool exporter_alive(std::int32_t pid) {
    if (pid <= 0) return false;
    if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;  // no /proc: what kill() said
    const std::size_t paren = line.rfind(')');
    if (paren == std::string::npos || paren + 2 >= line.size()) return true;
    const char state = line[paren + 2];
    return state != 'Z' && state != 'X';
}

// Event `index` of `pool`: reset in the pool's creator, as the exporter
// left it in an opened pool.
Result<ze_event_handle_t> create_event(ze_event_pool_handle_t pool, std::uint32_t index) {
    ze_event_desc_t desc{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, index, ZE_EVENT_SCOPE_FLAG_HOST,
                         ZE_EVENT_SCOPE_FLAG_HOST};
    ze_event_handle_t event = nullptr;
    KEEL_TRY(KEEL_ZE(zeEventCreate, pool, &desc, &event).check());
    return event;
}

// Creates the pool's first kEvents events; on failure destroys those made
// and returns the error.
Result<void> make_events(ze_event_pool_handle_t pool, ze_event_handle_t (&events)[InterprocessEvent::kEvents]) {
    for (std::uint32_t i = 0; i < InterprocessEvent::kEvents; ++i) {
        Result<ze_event_handle_t> made = create_event(pool, i);
        if (!made.ok()) {
            for (std::uint32_t j = 0; j < i; ++j) (void)ze().zeEventDestroy(events[j]);
            return made.error();
        }
        events[i] = *made;
    }
    return ok();
}

// Whether `event` is signalled: a device-fatal answer is an error.
Result<bool> signalled(ze_event_handle_t event) {
    const ze_result_t state = ze().zeEventQueryStatus(event);
    if (state == ZE_RESULT_NOT_READY) return false;
    KEEL_TRY((ZeCall{"zeEventQueryStatus", state}.check()));
    return true;
}

}  // namespace

Result<std::shared_ptr<InterprocessEvent>> InterprocessEvent::create(Device& device) {
    ze_event_pool_desc_t desc{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr,
                              ZE_EVENT_POOL_FLAG_HOST_VISIBLE | ZE_EVENT_POOL_FLAG_IPC, kPoolEvents};
    ze_device_handle_t handle = device.handle();
    ze_event_pool_handle_t pool = nullptr;
    KEEL_TRY(KEEL_ZE(zeEventPoolCreate, device.context(), &desc, 1, &handle, &pool).check(device.label()));
    auto made = std::make_shared<InterprocessEvent>(Key{}, pool, false, static_cast<std::int32_t>(::getpid()));
    if (Result<void> r = make_events(pool, made->events_); !r.ok()) {
        made->events_[0] = nullptr;  // none left to destroy
        return r.error();
    }
    // Never recorded: complete, as every keel event.
    KEEL_TRY(KEEL_ZE(zeEventHostSignal, made->events_[kDone]).check(device.label()));
    return made;
}

Result<std::shared_ptr<InterprocessEvent>> InterprocessEvent::open(Device& device, const keel_ipc_handle& handle) {
    if (handle.kind != KEEL_IPC_HANDLE_EVENT || handle.byte_count != ZE_MAX_IPC_HANDLE_SIZE || handle.size != 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "not a Level Zero event handle (kind " +
                                                       std::to_string(handle.kind) + ", " +
                                                       std::to_string(handle.byte_count) + " bytes, size " +
                                                       std::to_string(handle.size) + ")");
    if (handle.fd < 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "the handle has no file descriptor: a Level Zero event handle is opened with its descriptor");
    const std::int32_t pid = first_word(handle.bytes);
    if (pid <= 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "the handle names no exporting process (" + std::to_string(pid) + "): malformed");
    ze_ipc_event_pool_handle_t h{};
    std::memcpy(h.data, handle.bytes, ZE_MAX_IPC_HANDLE_SIZE);
    // The driver reads the caller's descriptor during the call and keeps none of it.
    put_first_word(h.data, handle.fd);
    ze_event_pool_handle_t pool = nullptr;
    const ZeCall opened = KEEL_ZE(zeEventPoolOpenIpcHandle, device.context(), h, &pool);
    if (!opened.ok()) {
        const Error e = opened.error();
        // The driver's answer to bytes it does not know is a malformed handle.
        const Status code = opened.result == ZE_RESULT_ERROR_INVALID_ARGUMENT ? KEEL_STATUS_INVALID_ARGUMENT : e.code();
        return Error(code, "opening an event handle of process " + std::to_string(pid) + " on " + device.label() +
                               ": " + e.message());
    }
    auto made = std::make_shared<InterprocessEvent>(Key{}, pool, true, pid);
    if (Result<void> r = make_events(pool, made->events_); !r.ok()) {
        made->events_[0] = nullptr;
        return r.error();
    }
    return made;
}

InterprocessEvent::~InterprocessEvent() {
    for (ze_event_handle_t e : text_events_) (void)ze().zeEventDestroy(e);
    if (events_[0] != nullptr)
        for (ze_event_handle_t e : events_) (void)ze().zeEventDestroy(e);
    if (imported_)
        (void)ze().zeEventPoolCloseIpcHandle(pool_);
    else
        (void)ze().zeEventPoolDestroy(pool_);
}

Result<void> InterprocessEvent::export_handle(keel_ipc_handle* out) const {
    if (imported_) return Error(KEEL_STATUS_INVALID_ARGUMENT, "an imported event: only its exporter exports it");
    ze_ipc_event_pool_handle_t h{};
    KEEL_TRY(KEEL_ZE(zeEventPoolGetIpcHandle, pool_, &h).check());
    const std::int32_t driver_fd = first_word(h.data);
    if (driver_fd < 0)
        return Error(KEEL_STATUS_UNIMPLEMENTED,
                     "zeEventPoolGetIpcHandle gave a handle without a file descriptor in its first bytes: this "
                     "driver's event pools are not shared the Linux way");
    // A new descriptor for the caller; the driver's stays the driver's.
    const int fd = ::fcntl(driver_fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return Error(KEEL_STATUS_UNAVAILABLE,
                     "duplicating the handle's descriptor " + std::to_string(driver_fd) + ": " + std::strerror(errno));
    put_first_word(h.data, exporter_pid_);
    out->kind = KEEL_IPC_HANDLE_EVENT;
    out->fd = fd;
    out->size = 0;
    out->byte_count = ZE_MAX_IPC_HANDLE_SIZE;
    out->reserved = 0;
    std::memset(out->bytes, 0, sizeof out->bytes);
    std::memcpy(out->bytes, h.data, ZE_MAX_IPC_HANDLE_SIZE);
    return ok();
}

Result<std::uint64_t> InterprocessEvent::begin_record() {
    std::lock_guard lock(mutex_);
    // No command of this process signals or waits for "done" (only host
    // tasks signal it, under this mutex): the reset disturbs nothing here.
    KEEL_TRY(KEEL_ZE(zeEventHostReset, events_[kDone]).check());
    return ++latest_;
}

void InterprocessEvent::abandon(std::uint64_t record) noexcept {
    std::lock_guard lock(mutex_);
    if (latest_ != record) return;
    --latest_;
    if (completed_ >= latest_) (void)ze().zeEventHostSignal(events_[kDone]);
}

Result<void> InterprocessEvent::complete(std::uint64_t record, const Error* failure) {
    std::lock_guard lock(mutex_);
    if (record > completed_) completed_ = record;
    if (failure != nullptr && !failed_) {
        failed_ = true;  // published once: its events are created once
        // The failure first, then "done": an importer that sees "done" sees it.
        KEEL_TRY(publish_failure(*failure));
    }
    if (record != latest_) return ok();  // a newer record is pending: "done" waits for it
    return KEEL_ZE(zeEventHostSignal, events_[kDone]).check();
}

Result<void> InterprocessEvent::publish_failure(const Error& failure) {
    if (publish_text(failure.message())) KEEL_TRY(KEEL_ZE(zeEventHostSignal, events_[kMessage]).check());
    const auto code = static_cast<std::uint32_t>(failure.code());
    for (std::uint32_t bit = 0; bit < kCodeBits; ++bit)
        if ((code >> bit) & 1u) KEEL_TRY(KEEL_ZE(zeEventHostSignal, events_[kCodeFirst + bit]).check());
    return KEEL_ZE(zeEventHostSignal, events_[kFailed]).check();
}

bool InterprocessEvent::publish_text(std::string_view message) noexcept {
    // The text's events are created here, which resets them, and only its
    // 1 bits signalled. When one cannot be (out of host memory) "message"
    // stays unsignalled and importers get the status alone: the status and
    // "done" must cross whatever happens to the text.
    try {
        const std::string text = bounded_message(message);
        const std::uint32_t count = message_events(text);
        text_events_.reserve(count);
        for (std::uint32_t i = 0; i < count; ++i) {
            Result<ze_event_handle_t> made = create_event(pool_, kTextFirst + i);
            if (!made.ok()) return false;
            text_events_.push_back(*made);
            if (message_bit(text, i) && !KEEL_ZE(zeEventHostSignal, *made).ok()) return false;
        }
        return true;
    } catch (...) {
        return false;
    }
}

Result<std::string> InterprocessEvent::read_text() const {
    // One event at a time, destroyed once read: a failure costs no more
    // handles than a healthy event holds.
    return read_message([this](std::uint32_t i) -> Result<bool> {
        KEEL_TRY_ASSIGN(ze_event_handle_t event, create_event(pool_, kTextFirst + i));
        Result<bool> on = signalled(event);
        (void)ze().zeEventDestroy(event);
        return on;
    });
}

Result<void> InterprocessEvent::failure() const {
    KEEL_TRY_ASSIGN(const bool failed, signalled(events_[kFailed]));
    if (!failed) return ok();
    // "failed" is signalled for good, after everything it says: read once.
    std::lock_guard lock(read_mutex_);
    if (crossed_) return *crossed_;
    std::uint32_t code = 0;
    for (std::uint32_t bit = 0; bit < kCodeBits; ++bit)
        if (ze().zeEventQueryStatus(events_[kCodeFirst + bit]) == ZE_RESULT_SUCCESS) code |= 1u << bit;
    const auto status = code == 0 ? KEEL_STATUS_INTERNAL : static_cast<Status>(code);
    const std::string what = "recorded in process " + std::to_string(exporter_pid_) + " after its stream failed";
    Result<bool> has_text = signalled(events_[kMessage]);
    if (has_text.ok() && !*has_text) {
        crossed_.emplace(status, what + " with " + status_name(status) +
                                     " (its message did not cross: the exporter could not create or signal "
                                     "the events that carry it)");
        return *crossed_;
    }
    Result<std::string> text = has_text.ok() ? read_text() : Result<std::string>(has_text.error());
    if (!text.ok())  // not kept: a later question reads again
        return Error(status, what + " with " + status_name(status) + " (its message could not be read here: " +
                                 text.error().message() + ")");
    crossed_.emplace(status, what + ": " + *text + " (" + status_name(status) + ")");
    return *crossed_;
}

Result<bool> InterprocessEvent::query() const {
    const ze_result_t done = ze().zeEventQueryStatus(events_[kDone]);
    if (done == ZE_RESULT_NOT_READY) return false;
    KEEL_TRY((ZeCall{"zeEventQueryStatus", done}.check()));
    KEEL_TRY(failure());
    return true;
}

Result<void> InterprocessEvent::wait() const {
    for (;;) {
        const ze_result_t done = ze().zeEventHostSynchronize(events_[kDone], kLivenessCheckNs);
        if (done == ZE_RESULT_SUCCESS) break;
        if (done != ZE_RESULT_NOT_READY) return ZeCall{"zeEventHostSynchronize", done}.error();
        if (!exporter_alive(exporter_pid_)) {
            // It may have completed the record just before it exited.
            if (ze().zeEventQueryStatus(events_[kDone]) == ZE_RESULT_SUCCESS) break;
            return Error(KEEL_STATUS_UNAVAILABLE, "the exporting process " + std::to_string(exporter_pid_) +
                                                      " exited before the interprocess event's record completed");
        }
    }
    return failure();
}

}  // namespace keel::level_zero
