#include "baselines.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace keel::samples {
namespace {

using Clock = std::chrono::steady_clock;

double ns_per(Clock::duration d, std::size_t n) {
    return std::chrono::duration<double, std::nano>(d).count() / static_cast<double>(n);
}

}  // namespace

double spin_ping_pong_ns(std::size_t round_trips) {
    // A new thread starts on its creator's CPU and the scheduler moves it
    // to an idle one only after a while; until then two spinners share a
    // CPU and every pass waits for a preemption. Warm up (untimed) until the
    // passes are fast, as they are between long-lived stream workers.
    constexpr std::size_t kWarmUp = 20000;
    const std::size_t total = kWarmUp + round_trips;
    // Even values: the ball is with the main thread; odd: with the partner.
    std::atomic<std::size_t> ball{0};
    std::thread partner([&] {
        for (std::size_t i = 0; i < total; ++i) {
            while (ball.load(std::memory_order_acquire) != 2 * i + 1) {}
            ball.store(2 * i + 2, std::memory_order_release);
        }
    });
    Clock::time_point start;
    for (std::size_t i = 0; i < total; ++i) {
        if (i == kWarmUp) start = Clock::now();
        ball.store(2 * i + 1, std::memory_order_release);
        while (ball.load(std::memory_order_acquire) != 2 * i + 2) {}
    }
    auto elapsed = Clock::now() - start;
    partner.join();
    return ns_per(elapsed, round_trips);
}

double condvar_ping_pong_ns(std::size_t round_trips) {
    std::mutex mutex;
    std::condition_variable cv;
    std::size_t ball = 0;
    std::thread partner([&] {
        for (std::size_t i = 0; i < round_trips; ++i) {
            std::unique_lock lock(mutex);
            cv.wait(lock, [&] { return ball == 2 * i + 1; });
            ball = 2 * i + 2;
            cv.notify_one();
        }
    });
    auto start = Clock::now();
    for (std::size_t i = 0; i < round_trips; ++i) {
        std::unique_lock lock(mutex);
        ball = 2 * i + 1;
        cv.notify_one();
        cv.wait(lock, [&] { return ball == 2 * i + 2; });
    }
    auto elapsed = Clock::now() - start;
    partner.join();
    return ns_per(elapsed, round_trips);
}

double condvar_ping_pong_after_pause_ns(std::size_t round_trips, std::chrono::microseconds pause) {
    std::mutex mutex;
    std::condition_variable cv;
    std::size_t ball = 0;
    // For each pass of the ball: when it was passed and when the receiver
    // woke with it (even passes: main -> partner; odd: partner -> main).
    std::vector<Clock::time_point> passed(2 * round_trips), woke(2 * round_trips);
    auto play = [&](std::size_t first) {
        for (std::size_t pass = first; pass < 2 * round_trips; pass += 2) {
            std::unique_lock lock(mutex);
            if (pass > 0) {
                cv.wait(lock, [&] { return ball == pass; });
                woke[pass - 1] = Clock::now();
            }
            lock.unlock();
            std::this_thread::sleep_for(pause);
            lock.lock();
            passed[pass] = Clock::now();
            ball = pass + 1;
            cv.notify_one();
        }
    };
    std::thread partner([&] { play(1); });
    play(0);
    {
        std::unique_lock lock(mutex);
        cv.wait(lock, [&] { return ball == 2 * round_trips; });
        woke[2 * round_trips - 1] = Clock::now();
    }
    partner.join();
    Clock::duration total{};
    for (std::size_t pass = 0; pass < 2 * round_trips; ++pass) total += woke[pass] - passed[pass];
    return ns_per(total, round_trips);
}

}  // namespace keel::samples
