#include "trace/event_times.hpp"

#include <keel/base/no_destructor.hpp>

#include "access.hpp"
#include "plugin.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace keel::trace {

namespace {

// Every stream's timing, for the stop of a session.
struct TimesList {
    std::mutex mu;
    std::vector<std::weak_ptr<StreamTimes>> list;
};

TimesList& times_list() {
    static base::NoDestructor<TimesList> instance;
    return instance.get();
}

// A point that will never be resolved, or was: its record waits for one
// write less.
void point_settled(Record* record) noexcept { mark_dropped(record); }

}  // namespace

StreamTimes::~StreamTimes() {
    // close() ran (Stream::close) unless the stream never closed; then the
    // plugin may be gone: its events are left to it.
}

keel_event StreamTimes::take_event() noexcept {
    if (!spare_.empty()) {
        keel_event e = spare_.back();
        spare_.pop_back();
        return e;
    }
    keel_event e = nullptr;
    if (!api_.event_create(device_, KEEL_EVENT_TIMING, &e).ok()) return nullptr;
    return e;
}

void StreamTimes::give_back(keel_event event) noexcept {
    if (event == nullptr) return;
    try {
        spare_.push_back(event);
    } catch (...) {
        (void)api_.event_destroy(event);
    }
}

std::atomic<std::int64_t>* StreamTimes::take_cell() noexcept {
    if (!spare_cells_.empty()) {
        std::atomic<std::int64_t>* c = spare_cells_.back();
        spare_cells_.pop_back();
        return c;
    }
    try {
        return &cells_.emplace_back(0);
    } catch (...) {
        return nullptr;
    }
}

namespace {

// A cell whose host function ran (it holds a time) is free again; one
// whose host function may still run stays where it is.
void reuse_cell(std::vector<std::atomic<std::int64_t>*>& spare, std::atomic<std::int64_t>* cell) noexcept {
    if (cell == nullptr || cell->load(std::memory_order_acquire) == 0) return;
    cell->store(0, std::memory_order_relaxed);
    try {
        spare.push_back(cell);
    } catch (...) {
        // Out of host memory: the cell stays unused in the deque.
    }
}

}  // namespace

void StreamTimes::anchor_reached(void* cell, keel_status /*status*/) {
    static_cast<std::atomic<std::int64_t>*>(cell)->store(now_ns(), std::memory_order_release);
}

// The anchor: an event, then a host function that reads the host's clock.
// The stream runs the host function after the event completed, so the time
// it reads is an upper bound of the event's.
bool StreamTimes::push_anchor_locked() noexcept {
    keel_event e = take_event();
    if (e == nullptr) return false;
    std::atomic<std::int64_t>* cell = take_cell();
    if (cell == nullptr) {
        give_back(e);
        return false;
    }
    auto fail = [&] {
        give_back(e);  // recorded or not, it may be recorded again
        try {
            spare_cells_.push_back(cell);  // its host function never runs
        } catch (...) {
        }
        return false;
    };
    if (!api_.event_record(e, stream_).ok()) return fail();
    if (!append_locked(Point{e, nullptr, false, cell, 0})) return fail();
    if (!api_.stream_enqueue_host_func(stream_, &anchor_reached, cell).ok()) {
        points_.pop_back();
        return fail();
    }
    tail_is_end_ = false;
    return true;
}

bool StreamTimes::append_locked(const Point& p) noexcept {
    if (head_ == points_.size()) {
        points_.clear();
        head_ = 0;
    } else if (head_ >= kResolveBatch && head_ * 2 >= points_.size()) {
        // What resolved is at the front: move the rest there (amortised).
        points_.erase(points_.begin(), points_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
    }
    try {
        points_.push_back(p);
    } catch (...) {
        return false;
    }
    return true;
}

void StreamTimes::pop_front_locked() noexcept {
    ++head_;
    if (head_ == points_.size()) {
        points_.clear();
        head_ = 0;
    }
}

bool StreamTimes::push_locked(Record* record, bool is_end) noexcept {
    if (closed_ || !on() || record->session != current_session()) return false;
    if (session_ != record->session) {
        drop_locked();
        session_ = record->session;
    }
    if (!is_end && tail_is_end_) {
        // The end event just ahead on the stream is this operation's start
        // while the stream has not reached it: the stream goes straight on
        // to this operation then. One it reached already may have idled
        // since: this operation gets a start event of its own.
        // Asked through elapsed time (none while not complete), not a query:
        // a query may tell a checking plugin that the host learned of the
        // work before the event, which the program itself never did.
        float ms = 0;
        Result<void> reached = api_.event_elapsed_time(tail_event_, tail_event_, &ms);
        if (!reached.ok() && reached.error().code() == KEEL_STATUS_FAILED_PRECONDITION) {
            if (!append_locked(Point{nullptr, record, false, nullptr, now_ns()})) return false;
            marks_pending(record, 1);
            tail_is_end_ = false;
            return true;
        }
    }
    // The session's first point on the stream is its anchor: times start there.
    if (last_ == nullptr && head_ == points_.size() && !push_anchor_locked()) return false;
    keel_event e = take_event();
    if (e == nullptr) return false;
    if (Result<void> recorded = api_.event_record(e, stream_); !recorded.ok()) {
        // A stream that failed refuses new work: its error is the operation's status.
        record->status.store(recorded.error().code(), std::memory_order_relaxed);
        give_back(e);
        return false;
    }
    if (!append_locked(Point{e, record, is_end, nullptr, 0})) {
        give_back(e);
        return false;
    }
    marks_pending(record, 1);
    tail_is_end_ = is_end;
    tail_event_ = e;
    // Later anchors, at doubling intervals, tighten the stream's times:
    // each bounds how late they all sit.
    if (++pushed_ >= next_anchor_ && is_end) {
        next_anchor_ = pushed_ * 2;
        (void)push_anchor_locked();
    }
    if (points_.size() - head_ >= resolve_at_) {
        resolve_locked();
        // A stream far behind is tried again a batch later, not at every point.
        resolve_at_ = points_.size() - head_ + kResolveBatch;
    }
    return true;
}

bool StreamTimes::start(Record* record) noexcept {
    std::lock_guard lock(mu_);
    return push_locked(record, false);
}

bool StreamTimes::end(Record* record) noexcept {
    std::lock_guard lock(mu_);
    return push_locked(record, true);
}

// In stream order, while the events have completed: the anchor's time is
// its host function's, each later point's the previous one's plus the
// elapsed time between their events (upper bounds all); a start without an
// event of its own takes the end just ahead of it, or its enqueue if later.
void StreamTimes::resolve_locked() noexcept {
    while (head_ < points_.size()) {
        const Point p = points_[head_];
        double at = 0;
        if (p.event == nullptr) {
            if (last_timed_) {
                p.record->start_ns.store(std::llround(std::max(last_ns_, static_cast<double>(p.not_before))),
                                         std::memory_order_release);
                note_timed(p.record, false, p.not_before);
            }
            pop_front_locked();
            point_settled(p.record);
            continue;
        }
        if (last_ == nullptr) {
            // The anchor: its host function has run once the event
            // completed and the stream went on.
            const std::int64_t host = p.cell != nullptr ? p.cell->load(std::memory_order_acquire) : 0;
            if (host == 0) return;
            at = static_cast<double>(host);
        } else {
            float ms = 0;
            Result<void> elapsed = api_.event_elapsed_time(last_, p.event, &ms);
            if (!elapsed.ok()) {
                // Not complete yet: the later points are not either.
                if (elapsed.error().code() == KEEL_STATUS_FAILED_PRECONDITION) return;
                // The stream failed: this point never gets a time.
                if (p.record != nullptr && p.is_end)
                    p.record->status.store(elapsed.error().code(), std::memory_order_relaxed);
                pop_front_locked();
                give_back(p.event);
                reuse_cell(spare_cells_, p.cell);
                last_timed_ = false;
                if (p.record != nullptr) point_settled(p.record);
                continue;
            }
            // Rounded up by the float's last place: still an upper bound.
            const float up = std::nextafter(ms, HUGE_VALF);
            at = last_ns_ + static_cast<double>(up) * 1e6;
            // At most what the chain may sit late by, past its anchor's
            // slack: the plugin's rounding to a float (half a place) and ours.
            rounded_up_ns_ += 1.5 * static_cast<double>(up - ms) * 1e6;
            if (p.cell != nullptr) {
                // A later anchor: its host function's time bounds the event's
                // too, and by how much every time of the stream sits late.
                const std::int64_t host = p.cell->load(std::memory_order_acquire);
                if (host != 0) late_by_ns_ = std::max(late_by_ns_, at - static_cast<double>(host) - rounded_up_ns_);
            }
        }
        if (p.record != nullptr) {
            (p.is_end ? p.record->end_ns : p.record->start_ns).store(std::llround(at), std::memory_order_release);
            note_timed(p.record, p.is_end, 0);
        }
        pop_front_locked();
        reuse_cell(spare_cells_, p.cell);
        give_back(last_);
        last_ = p.event;
        last_ns_ = at;
        last_timed_ = true;
        if (p.record != nullptr) point_settled(p.record);
    }
}

void StreamTimes::note_timed(Record* record, bool is_end, std::int64_t not_before) noexcept {
    try {
        timed_.push_back(Timed{record, not_before, is_end});
    } catch (...) {
        // Out of host memory: this time keeps the first anchor's bound.
    }
}

// Every time of the session resolved on the stream moves earlier by what the
// tightest anchor says they all sit late by (never before a start's floor).
void StreamTimes::tighten_locked() noexcept {
    const auto shift = static_cast<std::int64_t>(std::floor(late_by_ns_));
    if (shift > 0) {
        for (const Timed& t : timed_) {
            std::atomic<std::int64_t>& field = t.is_end ? t.record->end_ns : t.record->start_ns;
            const std::int64_t v = field.load(std::memory_order_relaxed);
            if (v != 0) field.store(std::max(v - shift, t.not_before), std::memory_order_release);
        }
    }
    timed_.clear();
    late_by_ns_ = 0;
}

void StreamTimes::drop_locked() noexcept {
    // Their session may be over, their records reused: never moved now.
    timed_.clear();
    late_by_ns_ = 0;
    // A failed stream may never complete the events behind its failure: its
    // error is the status of those operations, as a host function's would be.
    std::int32_t done = 0;
    Result<void> state = head_ == points_.size() ? Result<void>(ok()) : api_.stream_query(stream_, &done);
    for (std::size_t i = head_; i < points_.size(); ++i) {
        const Point& p = points_[i];
        give_back(p.event);
        reuse_cell(spare_cells_, p.cell);
        if (p.record == nullptr) continue;
        if (!state.ok() && p.is_end) p.record->status.store(state.error().code(), std::memory_order_relaxed);
        point_settled(p.record);
    }
    points_.clear();
    head_ = 0;
    give_back(last_);
    last_ = nullptr;
    last_ns_ = 0;
    last_timed_ = false;
    tail_is_end_ = false;
    resolve_at_ = kResolveBatch;
    rounded_up_ns_ = 0;
    pushed_ = 0;
    next_anchor_ = kResolveBatch;
}

void StreamTimes::finish_session() noexcept {
    std::lock_guard lock(mu_);
    resolve_locked();
    tighten_locked();
    drop_locked();
}

void StreamTimes::close() noexcept {
    std::lock_guard lock(mu_);
    if (closed_) return;
    resolve_locked();
    if (on() && session_ == current_session()) tighten_locked();
    drop_locked();
    closed_ = true;
    // A pending record completes harmlessly ([event.destroy-pending]).
    for (keel_event e : spare_) (void)api_.event_destroy(e);
    spare_.clear();
}

std::shared_ptr<StreamTimes> make_stream_times(const detail::DeviceSlot& slot, keel_stream stream) noexcept {
    const detail::PluginApi& api = slot.api();
    const DeviceProperties& p = slot.properties;
    if (api.table().event_elapsed_time == nullptr || !p.has(DeviceCapability::event_timing)) return nullptr;
    // Memory the host addresses means streams the host runs: host
    // functions there tell exact times, and cost less than events.
    if (p.has(DeviceCapability::host_addressable)) return nullptr;
    try {
        auto times = std::make_shared<StreamTimes>(api, slot.handle, stream);
        add_stream_times(times);
        return times;
    } catch (...) {
        return nullptr;
    }
}

void add_stream_times(const std::shared_ptr<StreamTimes>& times) {
    TimesList& l = times_list();
    std::lock_guard lock(l.mu);
    std::erase_if(l.list, [](const std::weak_ptr<StreamTimes>& w) { return w.expired(); });
    l.list.push_back(times);
}

void finish_stream_times() noexcept {
    std::vector<std::shared_ptr<StreamTimes>> live;
    {
        TimesList& l = times_list();
        std::lock_guard lock(l.mu);
        try {
            for (const auto& w : l.list)
                if (auto t = w.lock()) live.push_back(std::move(t));
        } catch (...) {
        }
    }
    for (const auto& t : live) t->finish_session();
}

StreamTimes* stream_times(const Stream& stream) noexcept { return detail::Access::stream_times(stream); }

}  // namespace keel::trace
