// The progress of one stream, as seen by everyone else: how many of its
// operations have completed, and its sticky error. Events, cross-stream
// waits and synchronize all wait on a Timeline; it is shared
// (std::shared_ptr) so an event or a wait may outlive its stream.
//
// Positions: every operation of a stream gets the next position (1, 2, ...)
// when it is enqueued, under the stream's queue lock, so positions follow
// queue order exactly. "Position p is done" means completed() >= p.
//
// Lazy timelines (checker mode with happens-before checking): the worker
// runs an operation once something needs it — a wait for it (host or
// another stream's worker, through wait_for), a query, or the stream going
// away — or once kLazyPatience has passed, whichever comes first. Work
// nothing waits for yet runs late, so that a free or host access that comes
// too early usually comes before that work; the patience keeps keel.h's
// forward-progress rule: a correct program that waits for a host function's
// effect without a keel wait (a flag the function sets) still finishes.
//
// Thread-safety: shared between the stream's worker (the only writer of
// progress and of the error) and any number of host threads and other
// workers (readers/waiters).
#pragma once

#include "park.hpp"

#include <keel/result.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <thread>

namespace keel::cpu {

class Timeline {
public:
    static constexpr std::uint64_t kNoError = std::numeric_limits<std::uint64_t>::max();
    static constexpr std::uint64_t kEverything = std::numeric_limits<std::uint64_t>::max();  // demand()

    explicit Timeline(std::uint64_t stream_id, SpinWindow spin, bool lazy = false)
        : stream_id_(stream_id), spin_(spin), lazy_(lazy), demanded_(lazy ? 0 : kEverything) {}
    Timeline(const Timeline&) = delete;
    Timeline& operator=(const Timeline&) = delete;
    Timeline(Timeline&&) = delete;
    Timeline& operator=(Timeline&&) = delete;

    [[nodiscard]] std::uint64_t stream_id() const noexcept { return stream_id_; }

    [[nodiscard]] std::uint64_t completed() const noexcept {
        return completed_.load(std::memory_order_seq_cst);
    }
    [[nodiscard]] bool reached(std::uint64_t position) const noexcept { return completed() >= position; }

    // Worker only: position `p` (and all before it) completed.
    void advance_to(std::uint64_t p) noexcept {
        completed_.store(p, std::memory_order_seq_cst);
        // The woken thread is often placed on this core (the kernel expects
        // the waker to sleep next): let it run before this worker goes on
        // spinning for its own next wait. A no-op when it went elsewhere.
        if (waiters_.notify(p)) std::this_thread::yield();
    }

    // Blocks the caller until `position` completed: spins, then parks.
    void wait_for(std::uint64_t position) noexcept {
        demand(position);
        waiters_.wait(completed_, position, spin_);
    }

    // Lazy timelines: somebody needs everything up to `position` to run.
    void demand(std::uint64_t position) noexcept {
        if (!lazy_) return;
        std::uint64_t seen = demanded_.load(std::memory_order_seq_cst);
        while (seen < position && !demanded_.compare_exchange_weak(seen, position, std::memory_order_seq_cst)) {}
        if (seen >= position) return;
        demand_epoch_.fetch_add(1, std::memory_order_seq_cst);
        futex_wake_all(demand_epoch_);
    }
    // The longest a lazy worker holds back an operation nobody asked for:
    // long enough that an early free or host access in a test or a debug run
    // comes first, short enough that a program waiting for a host
    // function's effect by other means goes on.
    static constexpr std::chrono::milliseconds kLazyPatience{100};

    // Worker only: blocks until the operation at `position` may run: it was
    // demanded, or kLazyPatience passed (returns false then). No lost
    // wake-up: the epoch is read before `demanded_`, and demand() bumps it
    // after raising `demanded_`, so the futex wait returns at once or is woken.
    [[nodiscard]] bool wait_until_demanded(std::uint64_t position) noexcept {
        using clock = std::chrono::steady_clock;
        const auto deadline = clock::now() + kLazyPatience;
        while (demanded_.load(std::memory_order_seq_cst) < position) {
            const std::uint32_t epoch = demand_epoch_.load(std::memory_order_seq_cst);
            if (demanded_.load(std::memory_order_seq_cst) >= position) return true;
            const auto left = deadline - clock::now();
            if (left <= clock::duration::zero()) return false;
            futex_wait_for(demand_epoch_, epoch, left);
        }
        return true;
    }

    // The operation at `position` failed (its worker), or the checker found
    // a bug that fails the stream from `position` on (any thread). The first
    // failure sticks; operations at or after its position are skipped.
    void fail(std::uint64_t position, Error error) {
        if (claimed_.exchange(true, std::memory_order_acq_rel)) return;
        error_.emplace(std::move(error));
        error_position_.store(position, std::memory_order_release);
    }
    [[nodiscard]] bool failed() const noexcept {
        return error_position_.load(std::memory_order_acquire) != kNoError;
    }
    // True when the operation at `position` is to be skipped.
    [[nodiscard]] bool failed_at(std::uint64_t position) const noexcept {
        return error_position_.load(std::memory_order_acquire) <= position;
    }
    // Position of the failed operation, kNoError if none.
    [[nodiscard]] std::uint64_t error_position() const noexcept {
        return error_position_.load(std::memory_order_acquire);
    }
    // The sticky error; only valid when failed() returned true.
    [[nodiscard]] const Error& error() const noexcept { return *error_; }

private:
    const std::uint64_t stream_id_;
    const SpinWindow spin_;
    const bool lazy_;
    alignas(64) std::atomic<std::uint64_t> completed_{0};
    WaitQueue waiters_;
    alignas(64) std::atomic<std::uint64_t> error_position_{kNoError};
    std::atomic<bool> claimed_{false};  // the one fail() that writes error_
    std::optional<Error> error_;        // written once before error_position_ (release)
    alignas(64) std::atomic<std::uint64_t> demanded_;  // lazy: the last position somebody needs
    std::atomic<std::uint32_t> demand_epoch_{0};
};

// A point on a timeline: what an event record or a wait captures.
struct TimelinePoint {
    std::shared_ptr<Timeline> timeline;  // null: never recorded (complete)
    std::uint64_t position = 0;

    [[nodiscard]] bool done() const noexcept { return !timeline || timeline->reached(position); }
    // The timeline's sticky error if it failed at or before this point.
    [[nodiscard]] const Error* error() const noexcept {
        if (!timeline) return nullptr;
        std::uint64_t e = timeline->error_position();
        return (e != Timeline::kNoError && e <= position) ? &timeline->error() : nullptr;
    }
};

}  // namespace keel::cpu
