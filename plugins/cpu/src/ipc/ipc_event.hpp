// Events shared between processes (keel.h 1.6, ipc_event_*): an event made
// with KEEL_EVENT_INTERPROCESS has an EventState in a shared file. Its
// exporter numbers every record and a Publisher thread marks the record
// complete in the shared state once the recording stream reached it (with
// the stream's error, if it had failed); an importer waits on the shared
// counter (a futex other processes wake), checking every 50 ms that the
// exporter still exists, so a dead exporter is an error, never a hang.
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include "../timeline.hpp"
#include "shared_layouts.hpp"
#include "shared_segment.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace keel::cpu::ipc {

class SharedEvent {
public:
    // The exporter's side: a new shared state.
    [[nodiscard]] static Result<std::shared_ptr<SharedEvent>> create();
    // The importer's side of `handle` (from another process's export).
    [[nodiscard]] static Result<std::shared_ptr<SharedEvent>> open(const keel_ipc_handle& handle);

    SharedEvent(Fd file, Mapping mapping, bool imported) noexcept
        : file_(std::move(file)), mapping_(std::move(mapping)), imported_(imported) {}

    [[nodiscard]] bool imported() const noexcept { return imported_; }
    [[nodiscard]] EventState& state() const noexcept { return *reinterpret_cast<EventState*>(mapping_.get()); }
    [[nodiscard]] Result<void> export_handle(keel_ipc_handle* out) const;

    // Exporter: numbers a new record; `describe(record)` runs first, under
    // the event's lock, so an importer that sees the record sees what it
    // describes.
    [[nodiscard]] std::uint64_t record(const std::function<void(std::uint64_t)>& describe);
    // Exporter (Publisher): `record` completed, after a failure when `error`.
    void complete(std::uint64_t record, const Error* error) noexcept;

    // Importer: the most recent record made so far (0: never recorded).
    [[nodiscard]] std::uint64_t latest() const noexcept { return state().recorded.load(std::memory_order_acquire); }
    [[nodiscard]] bool done(std::uint64_t record) const noexcept {
        return state().completed.load(std::memory_order_acquire) >= record;
    }
    // The exporter's error when `record` followed a failure (after done()).
    [[nodiscard]] Result<void> error_of(std::uint64_t record) const;
    // Blocks until `record` completed; UNAVAILABLE once the exporter is gone first.
    [[nodiscard]] Result<void> wait(std::uint64_t record) const;

private:
    Fd file_;
    Mapping mapping_;
    const bool imported_;
    std::mutex record_mutex_;
};

// The exporter's thread that completes records in shared states, in the
// order they were made, once their streams reached them.
class Publisher {
public:
    Publisher() = default;
    Publisher(const Publisher&) = delete;
    Publisher& operator=(const Publisher&) = delete;
    Publisher(Publisher&&) = delete;
    Publisher& operator=(Publisher&&) = delete;
    // Completes what is pending (streams run their queued work), then stops.
    ~Publisher();

    void publish(std::shared_ptr<SharedEvent> event, std::uint64_t record, TimelinePoint point);

private:
    struct Pending {
        std::shared_ptr<SharedEvent> event;
        std::uint64_t record = 0;
        TimelinePoint point;
    };
    void run();

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Pending> pending_;
    bool stop_ = false;
    std::thread thread_;  // started by the first publish
};

}  // namespace keel::cpu::ipc
