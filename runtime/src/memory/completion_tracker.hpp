// Host-side completion of device work, without host callbacks.
//
// Every deferred release in the memory machinery (a freed block waiting for
// another stream's use, a staging block waiting for its copy, a held object,
// a fence's event) is one tracked entry: an event recorded on a stream plus a
// task to run once the host sees that event complete. Entries are kept per
// stream in record order. A stream executes in order, so a sweep queries only
// the oldest entry of each stream and stops at the first incomplete one:
// cost O(streams + completed), and one stuck stream never holds back the
// entries of another (no head-of-line blocking across streams).
//
// What one operation writes is its stream's: the queue (found through a
// per-thread cache, not the shared map), its sequence numbers, its counts.
// Counts shared by all streams change only when a stream's queue turns
// busy or idle.
//
// Releases happen on the host, batched: on later calls into the memory
// machinery, on an explicit sweep()/drain(), and in a background reclaimer
// thread while anything is outstanding. Host callbacks are never used: they
// must not call into the plugin (so they could not recycle events), and on
// real GPUs each costs about 100 us of stream latency.
#pragma once

#include <keel/host_func.hpp>
#include "memory/device_ops.hpp"
#include "memory/event_pool.hpp"
#include <keel/memory_stats.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace keel::memory {

enum class WorkKind : std::uint8_t { pending_free = 0, staging = 1, hold = 2, fence = 3 };
inline constexpr std::size_t kWorkKinds = 4;

// Sync: every member may be called from any thread. Tasks run on whichever
// thread sweeps (a caller of the memory machinery or the reclaimer thread),
// never while a tracker lock is held, and never on a plugin thread.
class CompletionTracker {
public:
    // `max_queued_per_stream` (0 = unbounded): past it, track() waits until
    // half of it is left on the stream. `reclaim_interval` zero: no background thread.
    CompletionTracker(DeviceOps& ops, EventPool& events, std::uint32_t max_queued_per_stream,
                      std::chrono::microseconds reclaim_interval);
    CompletionTracker(const CompletionTracker&) = delete;
    CompletionTracker& operator=(const CompletionTracker&) = delete;
    CompletionTracker(CompletionTracker&&) = delete;
    CompletionTracker& operator=(CompletionTracker&&) = delete;
    ~CompletionTracker() { shutdown(); }

    // Stops the reclaimer thread, then waits for every entry and runs its
    // task. Called by the owner before destroying what tasks refer to.
    void shutdown() noexcept;

    // Whether the calling thread is running a deferred release (of any
    // tracker) right now.
    [[nodiscard]] static bool in_release() noexcept;

    // Orders the records on `stream`: take one right after each
    // event_record there. Numbers of one stream ascend; those of a queue made
    // later (a new stream on a reused handle) are above every earlier one's.
    [[nodiscard]] std::uint64_t next_seq(keel_stream stream);

    // Tracks `event`, recorded on `stream` when sequence `seq` was taken;
    // runs `task` once the event is seen complete. With `owns_event` the
    // event then returns to the pool; otherwise the task's captures own it.
    void track(keel_stream stream, std::uint64_t seq, keel_event event, bool owns_event,
               WorkKind kind, HostFunc task);

    // Acquires a pooled event, records it on `stream` now and tracks it. On
    // error the task is dropped (destroyed) without running.
    [[nodiscard]] Result<void> record_and_track(keel_stream stream, WorkKind kind, HostFunc task);

    // Non-blocking: releases every entry whose event has completed; returns
    // how many it released. Skips a stream another thread is sweeping or
    // waiting on.
    std::size_t sweep() noexcept;
    // The same, and then waits for releases that other threads collected
    // and are running now (microseconds: a sweep never blocks on an event),
    // so that what had completed before the call is released when it
    // returns. Not from inside a release (it returns after the sweep then).
    std::size_t sweep_and_settle() noexcept;
    // Blocks until the oldest entry of `kind` completes, preferring the
    // oldest on `preferred` (whose work is more likely to be moving), then
    // sweeps it. false when no such entry exists.
    bool wait_oldest(WorkKind kind, keel_stream preferred) noexcept;
    // Blocks until everything tracked before the call completed and was
    // released (also releases running on other threads). Called from a
    // release itself, it does not wait for releases in progress.
    void drain() noexcept;
    // The stream closed (its work is done): releases what it tracked and
    // forgets its queue, so that streams coming and going leave nothing
    // behind. A queue still in use by a sweep stays, to be forgotten at a
    // later close of that handle or with the tracker.
    void forget_stream(keel_stream stream) noexcept;

    // Whether nothing is tracked (one shared read: for fast paths).
    [[nodiscard]] bool idle() const noexcept { return busy_queues_.load(std::memory_order_acquire) == 0; }
    // Tracked entries not yet released (of `kind`): a sum over the streams.
    [[nodiscard]] std::uint64_t outstanding() const noexcept;
    [[nodiscard]] std::uint64_t outstanding(WorkKind kind) const noexcept;
    [[nodiscard]] TrackerStats stats() const;

private:
    struct Entry {
        std::uint64_t seq = 0;
        keel_event event = nullptr;
        bool owns_event = false;
        WorkKind kind = WorkKind::hold;
        HostFunc task;
    };
    struct StreamQueue {
        StreamQueue(keel_stream s, std::uint64_t first_seq) : stream(s), next_seq(first_seq) {}
        keel_stream stream;
        std::atomic<std::uint64_t> next_seq;
        std::mutex sweep_mu;  // one sweeper or waiter per stream at a time
        std::mutex mu;        // guards entries and the counts below
        std::deque<Entry> entries;  // ascending seq
        // Tracked and not yet released (in `entries` or being released), by
        // kind, and the most at once.
        std::uint64_t count = 0;
        std::array<std::uint64_t, kWorkKinds> by_kind{};
        std::uint64_t peak = 0;
        // Taken out of the map (forget_stream; set under mu): callers that
        // still hold it look the stream up again.
        std::atomic<bool> forgotten{false};
        // Entries taken out of `entries` whose tasks have not finished yet,
        // so that drain() can wait for releases running on other threads.
        std::atomic<int> finishing{0};
        // Threads about to collect or collecting completed entries (raised
        // before sweep_mu is tried), so that sweep_and_settle() also waits
        // for a sweeper that got the lock first.
        std::atomic<int> collecting{0};
        // An entry whose query failed (0: none): sweeps cannot tell whether
        // it completed, so the reclaimer waits for it.
        std::atomic<std::uint64_t> unanswered{0};
    };
    struct Done {
        StreamQueue* queue = nullptr;
        keel_event event = nullptr;
        bool owns_event = false;
        WorkKind kind = WorkKind::hold;
        HostFunc task;
    };

    // The queue of `stream`, from this thread's cache when it was the last
    // one used here, else from the map (made on first use). The reference
    // lasts until this thread looks up another stream (the cache holds it).
    StreamQueue& cached_queue(keel_stream stream);
    std::shared_ptr<StreamQueue> queue_for(keel_stream stream);
    std::shared_ptr<StreamQueue> queue_in_map(keel_stream stream);
    std::vector<std::shared_ptr<StreamQueue>> all_queues();
    // With q.sweep_mu held: moves the completed prefix of q into `done`
    // (`known_complete` is a seq the caller saw complete, or 0).
    void collect_completed(StreamQueue& q, std::vector<Done>& done, std::uint64_t known_complete);
    // Blocks until the entry `seq` of q completes and collects q.
    void wait_entry(StreamQueue& q, std::uint64_t seq) noexcept;
    void finish(std::vector<Done>& done) noexcept;
    // Blocks on the entries whose queries failed (see StreamQueue::unanswered).
    void wait_unanswered() noexcept;
    void reclaimer_loop();

    DeviceOps& ops_;
    EventPool& events_;
    const std::uint32_t max_queued_per_stream_;
    const std::chrono::microseconds reclaim_interval_;

    const std::uint64_t id_;  // tells trackers apart in the per-thread queue cache
    // Queues with something tracked: written when a queue turns busy or idle.
    alignas(64) std::atomic<std::uint64_t> busy_queues_{0};
    // Each queue's sequence numbers start at a new multiple of 2^40.
    alignas(64) std::atomic<std::uint64_t> next_queue_base_{1};
    std::atomic<std::uint64_t> swept_{0};
    std::atomic<std::uint64_t> queue_waits_{0};
    std::atomic<std::uint64_t> forgotten_peak_{0};  // the largest peak of a forgotten queue

    // Queues are created on first use and forgotten when their stream
    // closes empty (forget_stream). Whoever uses one without holding
    // queues_mu_ holds a reference; a Done's raw pointer is safe because a
    // queue with releases in progress (`finishing`) is never forgotten.
    mutable std::shared_mutex queues_mu_;
    std::unordered_map<keel_stream, std::shared_ptr<StreamQueue>> queues_;

    std::mutex reclaim_mu_;
    std::condition_variable reclaim_cv_;
    bool stop_ = false;
    // Times the tracker turned busy (guarded by reclaim_mu_): the reclaimer
    // starts again from its shortest period on each.
    std::uint64_t busy_epoch_ = 0;
    // The reclaimer's period doubles while the tracker stays busy, up to
    // this many times reclaim_interval_.
    static constexpr int kMaxReclaimBackoff = 16;
    std::thread reclaimer_;
};

}  // namespace keel::memory
