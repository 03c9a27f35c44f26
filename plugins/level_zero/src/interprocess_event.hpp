// The Level Zero side of an event shared between processes (keel.h 1.6,
// ipc_event_*): a pool created with ZE_EVENT_POOL_FLAG_IPC whose events the
// exporter signals from the host and an importer opens with
// zeEventPoolOpenIpcHandle.
//
//   event 0      "done": signalled when the most recent record completed
//   event 1      "failed": signalled, for good, when a record completed
//                after its stream failed
//   events 2..5  the failing status code, one bit each
//   event 6      "message": the events after it carry the failure's text
//   events 7..   the text, one bit each (interprocess_message.hpp), created
//                only once a failure is published (by the exporter) or
//                read (by an importer): a healthy event holds 7 handles
//
// On a failed completion the exporter signals the text's bits, "message",
// the code's bits, "failed", then "done": an importer that sees "done"
// sees the rest.
//
// Why the host signals: a record resets "done" at once (so an importer that
// asks after the record call sees it pending, never the previous record's
// completion), and only the host task of the most recent record signals it
// when its stream gets there. A device signal of an older record could land
// after the reset and report the newer record complete early.
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include "device.hpp"
#include "interprocess_message.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <level_zero/ze_api.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keel::level_zero {

class InterprocessEvent {
    struct Key {
        explicit Key() = default;
    };

public:
    // The events created with the pool (and on import), and the pool's size.
    static constexpr std::uint32_t kEvents = 7;
    static constexpr std::uint32_t kPoolEvents = kEvents + kMessageEvents;

    // The exporter's side: a new pool, "done" signalled (never recorded).
    [[nodiscard]] static Result<std::shared_ptr<InterprocessEvent>> create(Device& device);
    // The importer's side of `handle` (from ipc_event_export in another process).
    [[nodiscard]] static Result<std::shared_ptr<InterprocessEvent>> open(Device& device,
                                                                         const keel_ipc_handle& handle);

    InterprocessEvent(Key, ze_event_pool_handle_t pool, bool imported, std::int32_t exporter_pid) noexcept
        : pool_(pool), imported_(imported), exporter_pid_(exporter_pid) {}
    InterprocessEvent(const InterprocessEvent&) = delete;
    InterprocessEvent& operator=(const InterprocessEvent&) = delete;
    InterprocessEvent(InterprocessEvent&&) = delete;
    InterprocessEvent& operator=(InterprocessEvent&&) = delete;
    // Destroys the events, then destroys (exporter) or closes (importer) the pool.
    ~InterprocessEvent();

    [[nodiscard]] bool imported() const noexcept { return imported_; }
    [[nodiscard]] Result<void> export_handle(keel_ipc_handle* out) const;

    // Exporter: a new record, pending from now on; its number.
    [[nodiscard]] Result<std::uint64_t> begin_record();
    // Exporter: record `record` was not enqueued after all.
    void abandon(std::uint64_t record) noexcept;
    // Exporter (the recording stream's host task): `record` completed; null
    // `failure` when its stream was healthy, else the stream's error.
    [[nodiscard]] Result<void> complete(std::uint64_t record, const Error* failure);

    // Importer: whether the most recent record completed; its error when it
    // completed after the exporter's stream failed.
    [[nodiscard]] Result<bool> query() const;
    // Importer: blocks until the most recent record completed (then as
    // query()); UNAVAILABLE once the exporting process is gone first.
    [[nodiscard]] Result<void> wait() const;

private:
    [[nodiscard]] Result<void> failure() const;  // after "done": the exporter's error, if any
    // Exporter, under mutex_: the text's events, "message", code, "failed".
    [[nodiscard]] Result<void> publish_failure(const Error& failure);
    // Exporter, under mutex_: creates and signals the text's events; false
    // when they are not all there.
    [[nodiscard]] bool publish_text(std::string_view message) noexcept;
    // Importer: the exporter's text, through events created one at a time.
    [[nodiscard]] Result<std::string> read_text() const;

    ze_event_pool_handle_t pool_;
    ze_event_handle_t events_[kEvents] = {};
    const bool imported_;
    const std::int32_t exporter_pid_;
    std::mutex mutex_;               // exporter: orders resets and signals of "done"
    std::uint64_t latest_ = 0;       // guarded by mutex_; records made
    std::uint64_t completed_ = 0;    // guarded by mutex_; highest record completed
    bool failed_ = false;            // guarded by mutex_
    std::vector<ze_event_handle_t> text_events_;  // guarded by mutex_; exporter: the text's, kept until the end
    mutable std::mutex read_mutex_;               // importer: one reading of the text at a time
    mutable std::optional<Error> crossed_;        // guarded by read_mutex_; the exporter's error once read
};

}  // namespace keel::level_zero
