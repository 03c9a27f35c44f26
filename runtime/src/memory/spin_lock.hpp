// A lock for critical sections of a few dozen instructions (a stream pool's
// tree operations): under contention a waiter spins briefly instead of
// sleeping on a futex, whose wake-up costs more than the section itself
// (Paddle's allocator made the same change). After a short spin it yields,
// so that an oversubscribed machine does not burn the holder's time slice.
#pragma once

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KEEL_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define KEEL_CPU_RELAX() asm volatile("yield" ::: "memory")
#else
#define KEEL_CPU_RELAX() ((void)0)
#endif

namespace keel::memory::detail {

// Sync; BasicLockable (use with std::lock_guard). Not recursive.
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
                    KEEL_CPU_RELAX();
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

}  // namespace keel::memory::detail
