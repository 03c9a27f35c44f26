#include "baselines.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace keel::samples {
namespace {

using Clock = std::chrono::steady_clock;

double ns_per(Clock::duration d, std::size_t n) {
    return std::chrono::duration<double, std::nano>(d).count() / static_cast<double>(n);
}

}  // namespace

double spin_ping_pong_ns(std::size_t round_trips) {
    // Even values: the ball is with the main thread; odd: with the partner.
    std::atomic<std::size_t> ball{0};
    std::thread partner([&] {
        for (std::size_t i = 0; i < round_trips; ++i) {
            while (ball.load(std::memory_order_acquire) != 2 * i + 1) {}
            ball.store(2 * i + 2, std::memory_order_release);
        }
    });
    auto start = Clock::now();
    for (std::size_t i = 0; i < round_trips; ++i) {
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

}  // namespace keel::samples
