// A lock for critical sections of a few dozen instructions, shared by the
// runtime (a stream pool's tree operations) and plugins (a stream's queue):
// under contention a waiter spins briefly instead of sleeping on a futex,
// whose wake-up costs more than the section itself (Paddle's allocator made
// the same change). After a short spin it yields, so that on an
// oversubscribed machine a preempted holder gets its core back. Internal to
// keel (not part of the runtime's API); header-only in keel::base so both
// sides of the ABI use it.
#pragma once

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace keel::base {

// A spin-wait hint to the CPU.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}

// Sync; BasicLockable (use with std::lock_guard). Uncontended: one atomic
// exchange, no system call. Not recursive.
class SpinLock {
public:
    SpinLock() = default;
    SpinLock(const SpinLock&) = delete;
    SpinLock& operator=(const SpinLock&) = delete;
    SpinLock(SpinLock&&) = delete;
    SpinLock& operator=(SpinLock&&) = delete;
    ~SpinLock() = default;

    void lock() noexcept {
        for (int spins = 0;;) {
            if (!locked_.exchange(true, std::memory_order_acquire)) return;
            while (locked_.load(std::memory_order_relaxed)) {
                if (++spins < 64)
                    cpu_relax();
                else
                    std::this_thread::yield();
            }
        }
    }
    [[nodiscard]] bool try_lock() noexcept {
        return !locked_.load(std::memory_order_relaxed) &&
               !locked_.exchange(true, std::memory_order_acquire);
    }
    void unlock() noexcept { locked_.store(false, std::memory_order_release); }

private:
    std::atomic<bool> locked_{false};
};

}  // namespace keel::base
