// A stream: one worker thread running a FIFO queue of operations, like an
// NPU's hardware queue. Enqueue returns at once; the worker executes in
// order, translating device addresses at execution time; host memory of a
// copy is read or written when the copy executes.
//
// Wake-up path: an enqueue is a short critical section on the
// queue's spin lock (no system call) plus one load of `worker_parked_`. A
// worker that ran out of work spins for the spin window (KEEL_CPU_SPIN_US),
// then parks on a futex; the enqueue that finds it parked wakes it (one
// FUTEX_WAKE). See idle_wait() for why no wake-up is lost.
//
// Thread-safety: enqueue/synchronize/query may be called from any thread;
// the worker alone executes ops and advances the timeline.
#pragma once

#include "op_queue.hpp"
#include "park.hpp"
#include "timeline.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace keel::cpu {

class Device;
class Checker;
struct Config;

// Checker mode with happens-before checking runs streams lazily
// (timeline.hpp): an op runs once a wait, a query or a dependency needs it,
// or after Timeline::kLazyPatience at the latest.
[[nodiscard]] bool lazy_in_checker_mode(const Config& config) noexcept;

class Stream {
public:
    static constexpr std::uint32_t kMagic = 0x4B535452;  // "KSTR"
    // Most ops a stream holds before an enqueue waits for the worker: bounds
    // memory when a host enqueues far ahead, like a hardware queue's depth.
    static constexpr std::uint64_t kMaxDepth = 1u << 16;

    Stream(Device& device, std::uint64_t id);
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    Stream(Stream&&) = delete;
    Stream& operator=(Stream&&) = delete;
    // Runs what is queued, then stops the worker.
    ~Stream();

    [[nodiscard]] keel_stream handle() noexcept { return reinterpret_cast<keel_stream>(this); }
    [[nodiscard]] static Result<Stream*> from(keel_stream s);

    [[nodiscard]] std::uint64_t id() const noexcept { return timeline_->stream_id(); }
    [[nodiscard]] Device& device() noexcept { return device_; }
    [[nodiscard]] const std::shared_ptr<Timeline>& timeline() const noexcept { return timeline_; }

    // The stream's sticky error (prefixed "stream N is in an error state"), if it failed.
    [[nodiscard]] Result<void> check_usable() const;

    // Enqueues an op; `fill(Op&)` sets its fields under the queue lock.
    // Fails with the sticky error. In checker mode the op is filled first,
    // checked (Checker::admit) and queued only if the checker finds nothing.
    // `prepare(Op&)` (OpQueue::push) may throw before anything is enqueued.
    template <class Fill, class Prepare = NoPrepare>
    Result<std::uint64_t> enqueue(Fill&& fill, Prepare&& prepare = {});
    // What every enqueue does first: the sticky error, and waiting for the
    // worker when the queue is full (never while holding the checker's lock).
    [[nodiscard]] Result<void> prepare_enqueue();
    // Checker only, under its lock: queues the admitted `scratch` op.
    std::uint64_t push_checked(Op& scratch);

    // Position of the last op enqueued so far.
    [[nodiscard]] std::uint64_t enqueued() const noexcept { return queue_.enqueued(); }
    // All work enqueued so far: the point an event record captures.
    [[nodiscard]] TimelinePoint current_point() const { return {timeline_, queue_.enqueued()}; }

    [[nodiscard]] Result<void> synchronize();
    [[nodiscard]] Result<bool> query();

private:
    void run() noexcept;
    void idle_wait() noexcept;
    void wake_worker() noexcept;
    void process(Op& op) noexcept;
    [[nodiscard]] Result<void> execute(Op& op);
    void throttle(std::uint64_t queued);
    [[nodiscard]] Result<std::uint64_t> enqueue_checked(Op& scratch);

    std::uint32_t magic_ = kMagic;
    Device& device_;
    const bool checker_active_;
    std::shared_ptr<Timeline> timeline_;
    // A lower bound of timeline_->completed() that enqueues refresh only when
    // it no longer shows the queue below kMaxDepth: the worker writes
    // completed() at every op, and reading it at every enqueue was a cache
    // miss per enqueue on another core. Read-mostly, on the read-only line.
    std::atomic<std::uint64_t> completed_seen_{0};
    OpQueue queue_;
    alignas(64) std::atomic<std::uint32_t> worker_parked_{0};
    std::atomic<std::uint32_t> wake_epoch_{0};
    std::mt19937_64 rng_;  // worker only: checker delays and op faults
    std::thread worker_;
};

inline Result<void> Stream::prepare_enqueue() {
    KEEL_TRY(check_usable());
    const std::uint64_t queued = queue_.enqueued();
    if (completed_seen_.load(std::memory_order_relaxed) + kMaxDepth <= queued) [[unlikely]] {
        // `completed` is read after `queued`, so it may exceed it: compare, never subtract blindly.
        // Another producer may store an older bound meanwhile: that only
        // brings the next refresh sooner.
        const std::uint64_t completed = timeline_->completed();
        completed_seen_.store(completed, std::memory_order_relaxed);
        if (completed + kMaxDepth <= queued) throttle(queued);
    }
    return ok();
}

template <class Fill, class Prepare>
Result<std::uint64_t> Stream::enqueue(Fill&& fill, Prepare&& prepare) {
    KEEL_TRY(prepare_enqueue());
    if (checker_active_) [[unlikely]] {
        Op scratch;
        prepare(scratch);
        fill(scratch);
        return enqueue_checked(scratch);
    }
    const std::uint64_t position = queue_.push(fill, prepare);
    // Pairs with idle_wait(): the push's link was a seq_cst RMW.
    if (worker_parked_.load(std::memory_order_seq_cst) != 0) [[unlikely]] wake_worker();
    return position;
}

}  // namespace keel::cpu
