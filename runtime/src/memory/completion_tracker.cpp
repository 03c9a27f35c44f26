#include "memory/completion_tracker.hpp"

#include "logging.hpp"
#include "memory/event_wait.hpp"
#include "memory/peak.hpp"

#include <algorithm>
#include <cassert>
#include <optional>

namespace keel::memory {

namespace {

// Depth of finish() on this thread: a release that calls drain() must not
// wait for itself.
thread_local int t_finish_depth = 0;

std::atomic<std::uint64_t> g_next_tracker_id{1};

// Set once this thread's cache below is destroyed: a thread that is
// exiting (the main thread while static objects are destroyed at exit, a
// Fence or buffer in a global among them) still tracks work, through the
// map. A bool without a destructor stays readable until the thread ends.
thread_local bool t_queue_cache_gone = false;

// The queue this thread used last (one stream per thread is the common
// case), so that it is found without the map's lock, which every thread
// would write. Holds a reference: a queue forgotten meanwhile says so.
struct QueueCache {
    QueueCache() = default;
    QueueCache(const QueueCache&) = delete;
    QueueCache& operator=(const QueueCache&) = delete;
    ~QueueCache() { t_queue_cache_gone = true; }
    std::uint64_t tracker_id = 0;
    keel_stream stream = nullptr;
    std::shared_ptr<void> queue;
};
thread_local QueueCache t_queue_cache;

// Sequence numbers a queue may give out before they would reach the next
// queue's: 2^40, a million years at a million records per second.
constexpr unsigned kSeqBits = 40;

}  // namespace

CompletionTracker::CompletionTracker(DeviceOps& ops, EventPool& events,
                                     std::uint32_t max_queued_per_stream,
                                     std::chrono::microseconds reclaim_interval)
    : ops_(ops),
      events_(events),
      max_queued_per_stream_(max_queued_per_stream),
      reclaim_interval_(reclaim_interval),
      id_(g_next_tracker_id.fetch_add(1, std::memory_order_relaxed)) {
    if (reclaim_interval_.count() > 0) reclaimer_ = std::thread([this] { reclaimer_loop(); });
}

bool CompletionTracker::in_release() noexcept { return t_finish_depth > 0; }

void CompletionTracker::shutdown() noexcept {
    if (reclaimer_.joinable()) {
        {
            std::lock_guard lock(reclaim_mu_);
            stop_ = true;
        }
        reclaim_cv_.notify_all();
        reclaimer_.join();
    }
    // Tasks may track more work (a held buffer whose free is pending), so
    // drain until nothing is left.
    while (!idle()) drain();
}

CompletionTracker::StreamQueue& CompletionTracker::cached_queue(keel_stream stream) {
    assert(!t_queue_cache_gone);  // callers take the map's queue then
    QueueCache& cache = t_queue_cache;
    if (cache.tracker_id == id_ && cache.stream == stream) {
        auto* q = static_cast<StreamQueue*>(cache.queue.get());
        // Forgotten: its stream closed, and a new one may use the handle.
        // (Forgotten just now: track() checks again under the queue's lock.)
        if (!q->forgotten.load(std::memory_order_acquire)) return *q;
    }
    std::shared_ptr<StreamQueue> q = queue_in_map(stream);
    cache.tracker_id = id_;
    cache.stream = stream;
    cache.queue = q;
    return *q;
}

std::shared_ptr<CompletionTracker::StreamQueue> CompletionTracker::queue_for(keel_stream stream) {
    if (t_queue_cache_gone) [[unlikely]] return queue_in_map(stream);
    (void)cached_queue(stream);
    return std::static_pointer_cast<StreamQueue>(t_queue_cache.queue);
}

std::shared_ptr<CompletionTracker::StreamQueue> CompletionTracker::queue_in_map(keel_stream stream) {
    {
        std::shared_lock lock(queues_mu_);
        auto it = queues_.find(stream);
        if (it != queues_.end()) return it->second;
    }
    std::unique_lock lock(queues_mu_);
    auto& slot = queues_[stream];
    if (!slot) {
        const std::uint64_t base = next_queue_base_.fetch_add(1, std::memory_order_relaxed);
        slot = std::make_shared<StreamQueue>(stream, base << kSeqBits);
    }
    return slot;
}

std::uint64_t CompletionTracker::next_seq(keel_stream stream) {
    if (t_queue_cache_gone) [[unlikely]] return queue_in_map(stream)->next_seq.fetch_add(1, std::memory_order_relaxed);
    return cached_queue(stream).next_seq.fetch_add(1, std::memory_order_relaxed);
}

std::vector<std::shared_ptr<CompletionTracker::StreamQueue>> CompletionTracker::all_queues() {
    std::shared_lock lock(queues_mu_);
    std::vector<std::shared_ptr<StreamQueue>> out;
    out.reserve(queues_.size());
    for (auto& [stream, q] : queues_) out.push_back(q);
    return out;
}

void CompletionTracker::forget_stream(keel_stream stream) noexcept {
    std::shared_ptr<StreamQueue> q;
    {
        std::shared_lock lock(queues_mu_);
        auto it = queues_.find(stream);
        if (it == queues_.end()) return;
        q = it->second;
    }
    // Its work is done: what it tracked completes now (a failed stream's
    // skipped work too, which wait_entry releases on the error).
    for (;;) {
        std::uint64_t seq = 0;
        {
            std::lock_guard lock(q->mu);
            if (q->entries.empty()) break;
            seq = q->entries.front().seq;
        }
        wait_entry(*q, seq);
    }
    std::unique_lock lock(queues_mu_);
    auto it = queues_.find(stream);
    if (it == queues_.end() || it->second != q) return;
    std::lock_guard entries(q->mu);
    if (!q->entries.empty() || q->finishing.load(std::memory_order_acquire) != 0 ||
        q->collecting.load(std::memory_order_seq_cst) != 0)
        return;
    q->forgotten.store(true, std::memory_order_release);
    update_peak(forgotten_peak_, q->peak);
    queues_.erase(it);
}

void CompletionTracker::track(keel_stream stream, std::uint64_t seq, keel_event event,
                              bool owns_event, WorkKind kind, HostFunc task) {
    std::shared_ptr<StreamQueue> queue = queue_for(stream);
    std::optional<std::uint64_t> drained_at;  // past the bound: the entry to wait for
    bool turned_busy = false;
    for (;;) {
        StreamQueue& q = *queue;
        std::unique_lock lock(q.mu);
        if (q.forgotten.load(std::memory_order_relaxed)) [[unlikely]] {
            lock.unlock();
            queue = queue_for(stream);  // the map's (the cache sees it forgotten)
            continue;
        }
        Entry entry{seq, event, owns_event, kind, std::move(task)};
        // Almost always an append; a pending free's use may be older than
        // the newest entry, and then goes to its place in record order.
        if (q.entries.empty() || q.entries.back().seq < seq) {
            q.entries.push_back(std::move(entry));
        } else {
            auto at = std::upper_bound(q.entries.begin(), q.entries.end(), seq,
                                       [](std::uint64_t s, const Entry& e) { return s < e.seq; });
            q.entries.insert(at, std::move(entry));
        }
        // Past the bound, wait until half of it is left, not for one entry:
        // a host that runs ahead then waits (and wakes) once per half a
        // window of work instead of once per operation.
        if (max_queued_per_stream_ != 0 && q.entries.size() > max_queued_per_stream_)
            drained_at = q.entries[q.entries.size() - 1 - max_queued_per_stream_ / 2].seq;
        ++q.by_kind[static_cast<std::size_t>(kind)];
        turned_busy = q.count++ == 0;
        q.peak = std::max(q.peak, q.count);
        // Under the queue's lock, so that the shared count never misses a
        // queue that has entries (finish() takes it down under it too).
        if (turned_busy) busy_queues_.fetch_add(1, std::memory_order_acq_rel);
        break;
    }
    if (turned_busy && reclaimer_.joinable()) {
        {
            std::lock_guard lock(reclaim_mu_);
            ++busy_epoch_;
        }
        reclaim_cv_.notify_one();
    }
    if (drained_at) {
        // The host ran too far ahead of this stream.
        queue_waits_.fetch_add(1, std::memory_order_relaxed);
        wait_entry(*queue, *drained_at);
    }
}

Result<void> CompletionTracker::record_and_track(keel_stream stream, WorkKind kind,
                                                 HostFunc task) {
    KEEL_TRY_ASSIGN(keel_event event, events_.acquire());
    auto recorded = ops_.event_record(event, stream);
    if (!recorded.ok()) {
        events_.release(event);
        return std::move(recorded).error();
    }
    track(stream, next_seq(stream), event, true, kind, std::move(task));
    return ok();
}

void CompletionTracker::collect_completed(StreamQueue& q, std::vector<Done>& done,
                                          std::uint64_t known_complete) {
    for (;;) {
        keel_event event = nullptr;
        std::uint64_t seq = 0;
        {
            std::lock_guard lock(q.mu);
            if (q.entries.empty()) return;
            event = q.entries.front().event;
            seq = q.entries.front().seq;
        }
        if (seq > known_complete) {
            // The plugin is called with no tracker lock held. An error is
            // not taken for completion: the query itself may have failed
            // while the work still runs. Such entries wait for a blocking
            // wait (back-pressure, drain), whose error does mean the stream
            // failed (see wait_entry).
            auto query = ops_.event_query(event);
            if (!query.ok()) {
                detail::log_debug("[CompletionTracker] " + query.error().message());
                q.unanswered.store(seq, std::memory_order_relaxed);
                return;
            }
            if (!*query) return;
        }
        std::lock_guard lock(q.mu);
        // Only a sweeper (us, holding sweep_mu) removes entries, but track()
        // may have inserted an older one in front meanwhile: find ours.
        auto it = std::find_if(q.entries.begin(), q.entries.end(),
                               [seq](const Entry& e) { return e.seq == seq; });
        if (it == q.entries.end()) return;
        done.push_back(Done{&q, it->event, it->owns_event, it->kind, std::move(it->task)});
        q.finishing.fetch_add(1, std::memory_order_acq_rel);
        q.entries.erase(it);
    }
}

void CompletionTracker::finish(std::vector<Done>& done) noexcept {
    ++t_finish_depth;
    for (Done& d : done) {
        try {
            d.task.run();
        } catch (const std::exception& ex) {
            detail::log_warn(std::string("[CompletionTracker] a deferred release threw: ") + ex.what());
        } catch (...) {
            detail::log_warn("[CompletionTracker] a deferred release threw");
        }
        if (d.owns_event) events_.release(d.event);
        {
            std::lock_guard lock(d.queue->mu);
            --d.queue->by_kind[static_cast<std::size_t>(d.kind)];
            if (--d.queue->count == 0) busy_queues_.fetch_sub(1, std::memory_order_acq_rel);
        }
        d.queue->finishing.fetch_sub(1, std::memory_order_acq_rel);
    }
    --t_finish_depth;
    swept_.fetch_add(done.size(), std::memory_order_relaxed);
    done.clear();
}

std::size_t CompletionTracker::sweep() noexcept {
    if (idle()) return 0;
    std::vector<Done> done;  // allocates only when something completed
    try {
        // Collected under the shared lock (no copy of the queue list); the
        // tasks run after it is released, since they may track new work.
        std::shared_lock queues(queues_mu_);
        for (auto& [stream, q] : queues_) {
            q->collecting.fetch_add(1, std::memory_order_seq_cst);
            std::unique_lock sweeping(q->sweep_mu, std::try_to_lock);
            // Someone else is sweeping or waiting on this stream: skip it
            // rather than block behind them.
            if (sweeping.owns_lock()) collect_completed(*q, done, 0);
            q->collecting.fetch_sub(1, std::memory_order_seq_cst);
        }
    } catch (...) {
        detail::log_warn("[CompletionTracker::sweep] out of host memory");
    }
    const std::size_t released = done.size();
    finish(done);
    return released;
}

std::size_t CompletionTracker::sweep_and_settle() noexcept {
    const std::size_t released = sweep();
    if (t_finish_depth > 0) return released;  // our own releases would never settle
    // Waits with queues_mu_ released (a running release may create a
    // queue), and boundedly: threads that sweep back to back could keep a
    // queue busy indefinitely, and settling is only about accounting.
    for (int round = 0; round < 1000; ++round) {
        bool busy = false;
        {
            std::shared_lock queues(queues_mu_);
            for (auto& [stream, q] : queues_) {
                if (q->collecting.load(std::memory_order_seq_cst) != 0 ||
                    q->finishing.load(std::memory_order_acquire) != 0) {
                    busy = true;
                    break;
                }
            }
        }
        if (!busy) break;
        std::this_thread::yield();
    }
    return released;
}

void CompletionTracker::wait_entry(StreamQueue& q, std::uint64_t seq) noexcept {
    std::vector<Done> done;
    try {
        std::unique_lock sweeping(q.sweep_mu);
        keel_event event = nullptr;
        {
            std::lock_guard lock(q.mu);
            auto it = std::find_if(q.entries.begin(), q.entries.end(),
                                   [seq](const Entry& e) { return e.seq == seq; });
            if (it == q.entries.end()) return;  // already swept
            event = it->event;
        }
        // The entry cannot be swept (we hold sweep_mu), so its event is not
        // recycled while we block on it. An error means the stream failed:
        // its later work is skipped and never touches memory, so the entry
        // is released (the error surfaces at the caller's own
        // synchronisation point).
        auto waited = wait_for_event(ops_, event);
        if (!waited.ok()) detail::log_debug("[CompletionTracker] " + waited.error().message());
        {
            // Entries of this stream recorded before it are complete too.
            std::lock_guard lock(q.mu);
            auto it = std::find_if(q.entries.begin(), q.entries.end(),
                                   [seq](const Entry& e) { return e.seq == seq; });
            if (it != q.entries.end()) {
                done.push_back(Done{&q, it->event, it->owns_event, it->kind, std::move(it->task)});
                q.finishing.fetch_add(1, std::memory_order_acq_rel);
                q.entries.erase(it);
            }
        }
        collect_completed(q, done, seq);
    } catch (...) {
        detail::log_warn("[CompletionTracker::wait] out of host memory");
    }
    finish(done);
}

bool CompletionTracker::wait_oldest(WorkKind kind, keel_stream preferred) noexcept {
    if (idle()) return false;
    std::shared_ptr<StreamQueue> best;
    std::uint64_t best_seq = 0;
    try {
        for (const std::shared_ptr<StreamQueue>& q : all_queues()) {
            std::lock_guard lock(q->mu);
            auto it = std::find_if(q->entries.begin(), q->entries.end(),
                                   [kind](const Entry& e) { return e.kind == kind; });
            if (it == q->entries.end()) continue;
            const bool prefer = q->stream == preferred;
            const bool best_preferred = best != nullptr && best->stream == preferred;
            if (best == nullptr || (prefer && !best_preferred) ||
                (prefer == best_preferred && it->seq < best_seq)) {
                best = q;
                best_seq = it->seq;
            }
        }
    } catch (...) {
        return false;
    }
    if (best == nullptr) return false;
    wait_entry(*best, best_seq);
    return true;
}

void CompletionTracker::drain() noexcept {
    std::vector<std::shared_ptr<StreamQueue>> queues;
    try {
        queues = all_queues();
    } catch (...) {
        return;
    }
    for (const std::shared_ptr<StreamQueue>& q : queues) {
        std::uint64_t last = 0;
        {
            std::lock_guard lock(q->mu);
            if (!q->entries.empty()) last = q->entries.back().seq;
        }
        if (last != 0) wait_entry(*q, last);
        // Entries older than `last` that were out of stream order.
        while (last != 0) {
            std::uint64_t seq = 0;
            {
                std::lock_guard lock(q->mu);
                if (q->entries.empty() || q->entries.front().seq > last) break;
                seq = q->entries.front().seq;
            }
            wait_entry(*q, seq);
        }
        // Releases another thread took out of the queue may still be running.
        if (t_finish_depth == 0)
            while (q->finishing.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    }
}

std::uint64_t CompletionTracker::outstanding() const noexcept {
    std::uint64_t n = 0;
    std::shared_lock lock(queues_mu_);
    for (const auto& [stream, q] : queues_) {
        std::lock_guard entries(q->mu);
        n += q->count;
    }
    return n;
}

std::uint64_t CompletionTracker::outstanding(WorkKind kind) const noexcept {
    std::uint64_t n = 0;
    std::shared_lock lock(queues_mu_);
    for (const auto& [stream, q] : queues_) {
        std::lock_guard entries(q->mu);
        n += q->by_kind[static_cast<std::size_t>(kind)];
    }
    return n;
}

TrackerStats CompletionTracker::stats() const {
    TrackerStats s;
    std::uint64_t peaks = 0;
    {
        std::shared_lock lock(queues_mu_);
        for (const auto& [stream, q] : queues_) {
            std::lock_guard entries(q->mu);
            s.outstanding += q->count;
            peaks += q->peak;
        }
    }
    // Each stream's own peak, summed: exact for one stream, otherwise at
    // least the peak of the total (no shared counter is written per entry).
    s.peak_outstanding = std::max(peaks, forgotten_peak_.load(std::memory_order_relaxed));
    s.swept = swept_.load(std::memory_order_relaxed);
    s.queue_waits = queue_waits_.load(std::memory_order_relaxed);
    s.events_created = events_.created();
    return s;
}

void CompletionTracker::wait_unanswered() noexcept {
    std::vector<std::shared_ptr<StreamQueue>> queues;
    try {
        queues = all_queues();
    } catch (...) {
        return;
    }
    for (const std::shared_ptr<StreamQueue>& q : queues)
        if (const std::uint64_t seq = q->unanswered.exchange(0, std::memory_order_relaxed); seq != 0)
            wait_entry(*q, seq);
}

// Work that turns up after a quiet spell comes back within about one
// reclaim_interval_ (turning busy wakes the reclaimer and starts it again
// from that period). While work stays outstanding the period doubles, to
// kMaxReclaimBackoff times it: each wake-up takes a core from the threads
// doing that work (beside a stream of small all-reduces on 2 cores, 1 ms
// meant 1550 wake-ups a second), and meanwhile the host's own calls sweep
// and its bounds wait (allocation sweeps while frees are pending, the
// back-pressure bounds wait for the oldest work).
void CompletionTracker::reclaimer_loop() {
    std::unique_lock lock(reclaim_mu_);
    std::uint64_t seen_epoch = busy_epoch_;
    std::chrono::microseconds period = reclaim_interval_;
    while (!stop_) {
        reclaim_cv_.wait(lock, [this] { return stop_ || !idle(); });
        if (stop_) break;
        lock.unlock();
        sweep();
        // A failed stream's events fail every query, so its entries (and
        // what they hold, maybe this very instance's last owner) would wait
        // for a drain that may never come: the reclaimer may block, so it
        // waits for them, and a failed stream answers a wait at once.
        wait_unanswered();
        lock.lock();
        if (busy_epoch_ != seen_epoch) {
            seen_epoch = busy_epoch_;
            period = reclaim_interval_;
        }
        reclaim_cv_.wait_for(lock, period, [&] { return stop_ || busy_epoch_ != seen_epoch; });
        if (busy_epoch_ == seen_epoch) period = std::min(period * 2, reclaim_interval_ * kMaxReclaimBackoff);
    }
}

}  // namespace keel::memory
