// Helpers of the stress tests: their duration and a watchdog that turns a
// deadlock into a loud failure instead of a hung test run.
#pragma once

#include <keel/environment.hpp>
#include <keel/testing/knob.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace keel::cpu::testing {

// Seconds a stress test runs: `fallback`, or KEEL_STRESS_SECONDS.
inline double stress_seconds(double fallback) {
    return keel::testing::knob(env::number(env::Var::test_stress_seconds, 1e-3, 1e6), fallback);
}

// Aborts the process with `what` unless disarmed within `limit`.
class Watchdog {
public:
    Watchdog(std::chrono::seconds limit, std::string what) : what_(std::move(what)) {
        thread_ = std::thread([this, limit] {
            std::unique_lock lock(mutex_);
            if (!cv_.wait_for(lock, limit, [&] { return done_; })) {
                std::fprintf(stderr, "watchdog: %s did not finish in %lld s (deadlock or lost wake-up)\n",
                             what_.c_str(), static_cast<long long>(limit.count()));
                std::abort();
            }
        });
    }
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;
    Watchdog(Watchdog&&) = delete;
    Watchdog& operator=(Watchdog&&) = delete;
    ~Watchdog() {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }

private:
    std::string what_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;
};

}  // namespace keel::cpu::testing
