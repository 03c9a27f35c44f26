// The low-level waiting primitives of the plugin: the spin hint and spin lock
// it shares with the runtime, futex wait/wake on a 32-bit word, and the bounded
// "spin, then park" loop every waiter (workers and host threads) uses.
//
// Why raw futexes rather than std::condition_variable: a condvar costs a
// mutex round trip on BOTH sides even when nobody sleeps; here the waker
// pays one load when no one is parked and a FUTEX_WAKE only when someone is.
// Why not std::atomic::wait: its waiter bookkeeping is hashed per address
// bucket and spins on its own schedule; we want the spin window under our
// own control (KEEL_CPU_SPIN_US) for benchmarks of both regimes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <ctime>

#include <keel/base/spin_lock.hpp>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace keel::cpu {

using keel::base::cpu_relax;
using keel::base::SpinLock;

// Blocks while *word == expected (may return spuriously: callers loop).
inline void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected) noexcept {
#if defined(__linux__)
    static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected,
            nullptr, nullptr, 0);
#else
    word.wait(expected);
#endif
}

// As futex_wait, but gives up after `timeout` (callers recheck the clock).
inline void futex_wait_for(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                           std::chrono::nanoseconds timeout) noexcept {
#if defined(__linux__)
    if (timeout.count() <= 0) return;
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(timeout.count() % 1'000'000'000);
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, &ts,
            nullptr, 0);
#else
    (void)timeout;
    if (word.load() == expected) std::this_thread::yield();
#endif
}

inline void futex_wake_all(std::atomic<std::uint32_t>& word) noexcept {
#if defined(__linux__)
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX,
            nullptr, nullptr, 0);
#else
    word.notify_all();
#endif
}

// How long waiters spin before parking; negative = never park.
struct SpinWindow {
    std::int64_t ns = 50'000;
    [[nodiscard]] bool forever() const noexcept { return ns < 0; }
};

// Spins until `ready()` or the window passes: pause for a short burst, then
// yield between checks so that on an oversubscribed machine (2 cores, many
// threads) a spinner hands its core to the thread it is waiting for.
// Returns true when ready() became true.
template <class Ready>
[[nodiscard]] bool spin_until(Ready&& ready, SpinWindow window) noexcept {
    if (ready()) return true;
    if (window.ns == 0) return false;
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::nanoseconds(window.forever() ? 0 : window.ns);
    for (std::uint32_t round = 0;; ++round) {
        for (int i = 0; i < 64; ++i) {
            cpu_relax();
            if (ready()) return true;
        }
        if (!window.forever() && clock::now() >= deadline) return false;
        if (round >= 1) std::this_thread::yield();
    }
}

// Host or worker threads waiting for a counter (a stream's completed
// position) to reach their own targets. Each parked waiter has its own futex
// word and is woken only when the counter reaches its target: a host thread
// synchronising a stream is not woken by every operation the stream
// completes, and cannot steal the core from the stream a fence wakes. When
// nobody is parked, progress costs the advancing side one load.
//
// Protocol (Dekker-style, seq_cst): a waiter links its node and bumps
// `parked_` under the lock, then re-checks the counter; the advancer
// publishes the counter, then reads `parked_` and, when non-zero, takes the
// lock and wakes every waiter whose target is reached. Either the waiter
// sees the progress or the advancer sees the waiter: no lost wake-up. A
// woken waiter takes the lock once before it returns, so the advancer is
// done with its (stack-allocated) node.
class WaitQueue {
public:
    WaitQueue() = default;
    WaitQueue(const WaitQueue&) = delete;
    WaitQueue& operator=(const WaitQueue&) = delete;
    WaitQueue(WaitQueue&&) = delete;
    WaitQueue& operator=(WaitQueue&&) = delete;

    // Call after publishing `progress` (with a seq_cst store or RMW).
    // Returns whether it woke anyone.
    bool notify(std::uint64_t progress) noexcept {
        if (parked_.load(std::memory_order_seq_cst) == 0) return false;
        bool woke = false;
        std::lock_guard<SpinLock> lock(lock_);
        for (Waiter** link = &head_; *link != nullptr;) {
            Waiter* w = *link;
            if (w->target > progress) {
                link = &w->next;
                continue;
            }
            *link = w->next;
            parked_.fetch_sub(1, std::memory_order_relaxed);
            w->woken.store(1, std::memory_order_release);
            futex_wake_all(w->woken);
            woke = true;
        }
        return woke;
    }

    // Waits until counter >= target (the counter read with seq_cst loads).
    void wait(const std::atomic<std::uint64_t>& counter, std::uint64_t target, SpinWindow window) noexcept {
        const auto reached = [&] { return counter.load(std::memory_order_seq_cst) >= target; };
        if (spin_until(reached, window)) return;
        Waiter self;
        self.target = target;
        {
            std::lock_guard<SpinLock> lock(lock_);
            self.next = head_;
            head_ = &self;
            parked_.fetch_add(1, std::memory_order_seq_cst);
        }
        if (reached()) {
            std::lock_guard<SpinLock> lock(lock_);
            if (unlink(&self)) return;  // not woken: nobody touches `self` any more
        }
        while (self.woken.load(std::memory_order_acquire) == 0) futex_wait(self.woken, 0);
        std::lock_guard<SpinLock> lock(lock_);  // the advancer is done with `self`
    }

private:
    struct Waiter {
        std::uint64_t target = 0;
        std::atomic<std::uint32_t> woken{0};
        Waiter* next = nullptr;
    };
    // With lock_ held: removes `w` if still linked.
    bool unlink(Waiter* w) noexcept {
        for (Waiter** link = &head_; *link != nullptr; link = &(*link)->next) {
            if (*link == w) {
                *link = w->next;
                parked_.fetch_sub(1, std::memory_order_relaxed);
                return true;
            }
        }
        return false;
    }

    std::atomic<std::uint32_t> parked_{0};
    SpinLock lock_;
    Waiter* head_ = nullptr;  // guarded by lock_
};

}  // namespace keel::cpu
