// Device times through timing events: where a device's plugin offers event
// timing, a traced operation records a timing event after it on its stream
// (its end) instead of host functions, and its start and end are resolved
// later, without waiting, from elapsed times between the events.
//
// One event per operation on a busy stream: when the end event of the
// operation ahead has not completed at the enqueue (one elapsed-time query
// of it, which has no side effect: an event query may tell a checking
// plugin that the host learned of the work before it), it is
// also this operation's start: the stream goes straight on from it. The
// start is then the later of that end and the host's clock just before the
// enqueue, so that it never precedes the enqueue even when the stream
// reached the end in between. An operation with no such end just ahead of
// it (the first of the session on the stream, one behind a range's start,
// one on a stream that reached the end already and may have idled) records
// a start event of its own.
//
// Host time comes from the anchor, the session's first event on the
// stream, which a host function reading the host's clock follows on the
// stream: the stream runs it after the event completed, so its time is an
// upper bound of the event's (a host function enqueued before the event,
// ran while the host was still enqueuing, up to milliseconds
// before the event under load, and put operations' starts before their
// enqueue). Each later point's time is its predecessor's plus the elapsed
// time between their events, rounded up, so every point's time is an upper
// bound of when the stream reached it and never precedes its enqueue. Each
// resolved event becomes the next reference, so every elapsed time is short
// (float milliseconds stay exact to the device's resolution) and events
// are reused.
//
// The first anchor sits late by its host function's delay (on an idle
// stream, the host's own step from recording the event to enqueuing the
// function), and every time of the stream with it. Later anchors, after
// the 64th, 128th, 256th... point, are upper bounds too: the tightest says
// how late all the stream's times sit at least (less what rounding up may
// have added), and when the session ends or the stream closes every time
// of the session moves earlier by that much (a start never before its
// enqueue). Anchors recorded while the stream is busy follow their event
// at once: the times end up within the stream's step between two of its
// operations of the truth.
//
// Resolution happens every kResolveBatch events, when the session stops and
// when the stream closes (after its work is done): never a host wait.
//
// Threads: Sync. One mutex per stream guards its events; enqueuing threads,
// the thread that stops the session and the stream's close take it.
#pragma once

#include "trace/recorder.hpp"

#include <keel/keel.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace keel {
class Stream;
}  // namespace keel

namespace keel::detail {
class PluginApi;
struct DeviceSlot;
}  // namespace keel::detail

namespace keel::trace {

class StreamTimes {
public:
    StreamTimes(const detail::PluginApi& api, keel_device device, keel_stream stream) noexcept
        : api_(api), device_(device), stream_(stream) {}
    StreamTimes(const StreamTimes&) = delete;
    StreamTimes& operator=(const StreamTimes&) = delete;
    ~StreamTimes();

    // Records the start event of `record` (a record of the current session):
    // false when it could not (the caller falls back to host-function marks).
    [[nodiscard]] bool start(Record* record) noexcept;
    // Records the end event of `record`; false as for start().
    [[nodiscard]] bool end(Record* record) noexcept;
    // The session stopped: resolves what completed, forgets the rest.
    void finish_session() noexcept;
    // The stream's work is done and the stream goes: resolves everything and
    // destroys the events. No call after it records anything.
    void close() noexcept;

private:
    // An event recorded on the stream: an operation's start or end
    // (`record`), or the anchor (`cell`: where its host function writes).
    // A start with no event of its own (`event` null) is the end just ahead
    // of it, no earlier than `not_before` (host time before its enqueue).
    struct Point {
        keel_event event;
        Record* record;
        bool is_end;
        std::atomic<std::int64_t>* cell;
        std::int64_t not_before;
    };
    static constexpr std::size_t kResolveBatch = 64;

    [[nodiscard]] keel_event take_event() noexcept;
    void give_back(keel_event event) noexcept;
    [[nodiscard]] std::atomic<std::int64_t>* take_cell() noexcept;
    // Records the anchor's event and enqueues its host function behind it.
    [[nodiscard]] bool push_anchor_locked() noexcept;
    [[nodiscard]] bool push_locked(Record* record, bool is_end) noexcept;
    void resolve_locked() noexcept;
    void drop_locked() noexcept;
    void pop_front_locked() noexcept;
    void note_timed(Record* record, bool is_end, std::int64_t not_before) noexcept;
    void tighten_locked() noexcept;
    // A point that waits for its time; false (nothing changed) when out of host memory.
    [[nodiscard]] bool append_locked(const Point& p) noexcept;
    static void anchor_reached(void* cell, keel_status status);

    std::mutex mu_;
    const detail::PluginApi& api_;
    const keel_device device_;
    const keel_stream stream_;
    bool closed_ = false;
    std::uint32_t session_ = 0;        // of the points
    keel_event last_ = nullptr;        // the last resolved event: the reference of the next
    // Its time, an upper bound of when the stream reached it (0: no point of
    // the session resolved yet); a double, so that rounding to nanoseconds
    // never accumulates along the chain.
    double last_ns_ = 0;
    // Whether the last point resolved got its time (a failed stream's do not):
    // a start that shares it takes that time only then.
    bool last_timed_ = false;
    // Whether the last point recorded is an operation's end event: the next
    // operation's start, with nothing of the trace's in between.
    bool tail_is_end_ = false;
    keel_event tail_event_ = nullptr;  // that end's event (pending, or last_)
    // One cell per anchor host function that may still run (one a session):
    // a host function may run after its session ended; cells never move (deque) and live as
    // long as this. A cell read after its host function ran is reused.
    std::deque<std::atomic<std::int64_t>> cells_;
    std::vector<std::atomic<std::int64_t>*> spare_cells_;
    // Recorded, not resolved, in stream order: points_[head_, size). A vector
    // whose storage stays from batch to batch (no allocation per operation).
    std::vector<Point> points_;
    std::size_t head_ = 0;
    std::size_t resolve_at_ = kResolveBatch;  // pending points that bring the next resolve
    std::vector<keel_event> spare_;    // created, free to record again
    // The session's points so far, and the count that brings the next anchor.
    std::size_t pushed_ = 0;
    std::size_t next_anchor_ = kResolveBatch;
    // What the chain's rounding up may have added since the first anchor.
    double rounded_up_ns_ = 0;
    // How late every time of the session sits at least (from later anchors).
    double late_by_ns_ = 0;
    // Times written in the session, moved by late_by_ns_ when it ends.
    struct Timed {
        Record* record;
        std::int64_t not_before;  // a start's floor: its enqueue
        bool is_end;
    };
    std::vector<Timed> timed_;
};

// The stream's event timing, created on first use in a session; null where
// the device offers no event timing, or runs its streams on host threads
// (host functions are exact there, and cheaper).
[[nodiscard]] StreamTimes* stream_times(const Stream& stream) noexcept;

// A stream's event timing, registered for finish_stream_times(); null
// where stream_times() says (stream.cpp calls it once per stream).
[[nodiscard]] std::shared_ptr<StreamTimes> make_stream_times(const detail::DeviceSlot& slot,
                                                             keel_stream stream) noexcept;
void add_stream_times(const std::shared_ptr<StreamTimes>& times);

// Every stream's timing of the session that stopped (Registry::stop).
void finish_stream_times() noexcept;

}  // namespace keel::trace
