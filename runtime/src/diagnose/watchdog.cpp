#include "diagnose/watchdog.hpp"

#include "diagnose/host_waits.hpp"
#include "diagnose/report.hpp"
#include "logging.hpp"

#include <keel/environment.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>

namespace keel::doctor {

namespace {

constexpr double kDefaultTimeoutSeconds = 60.0;

struct Settings {
    double timeout_s = kDefaultTimeoutSeconds;
    std::string report_path;
};

const Settings& settings() {
    static const Settings s = [] {
        Settings out;
        auto timeout = env::number(env::Var::hang_timeout, 0.0, 1e9);
        if (!timeout.ok())
            detail::log_error("[keel::diagnose] " + timeout.error().message() + "; using " +
                              std::to_string(static_cast<int>(kDefaultTimeoutSeconds)));
        else if (*timeout)
            out.timeout_s = **timeout;
        if (auto path = env::text(env::Var::hang_report)) out.report_path = std::string(*path);
        return out;
    }();
    return s;
}

// Set by the handler on whichever thread takes the signal, read by the
// watch's thread: a lock-free atomic (async-signal-safe), since a volatile
// sig_atomic_t is only safe within one thread.
std::atomic<int> g_report_requested{0};
static_assert(std::atomic<int>::is_always_lock_free);

void on_sigusr1(int) { g_report_requested.store(1, std::memory_order_relaxed); }

class Watchdog {
public:
    Watchdog() : thread_([this] { run(); }) {}
    ~Watchdog() {
        {
            std::lock_guard lock(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        if (thread_.joinable()) thread_.join();
    }
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;
    Watchdog(Watchdog&&) = delete;
    Watchdog& operator=(Watchdog&&) = delete;

private:
    void run() {
        const Settings& s = settings();
        const double tick_s = s.timeout_s > 0 ? std::clamp(s.timeout_s / 4, 0.05, 1.0) : 0.2;
        const auto tick = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(tick_s));
        std::set<std::uint64_t> reported;
        std::unique_lock lock(mu_);
        while (!stop_) {
            cv_.wait_for(lock, tick, [this] { return stop_; });
            if (stop_) break;
            lock.unlock();
            check(s, reported);
            lock.lock();
        }
    }

    static void check(const Settings& s, std::set<std::uint64_t>& reported) {
        std::string why;
        if (g_report_requested.exchange(0, std::memory_order_relaxed) != 0) {
            why = "SIGUSR1";
        }
        if (s.timeout_s > 0) {
            const std::int64_t now = now_ns();
            const auto limit = static_cast<std::int64_t>(s.timeout_s * 1e9);
            std::set<std::uint64_t> live;
            for (const WaitView& w : host_waits()) {
                live.insert(w.id);
                if (now - w.since_ns < limit || reported.count(w.id)) continue;
                reported.insert(w.id);
                if (!why.empty()) continue;  // one diagnosis covers every wait
                char buf[64];
                std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(now - w.since_ns) / 1e9);
                why = "hang: thread " + std::to_string(w.thread) + " has waited " + buf + (w.note ? " on \"" : " in ") +
                      w.where + (w.note ? "\"" : "") + " (KEEL_HANG_TIMEOUT=" + std::to_string(s.timeout_s) + " s)";
            }
            std::erase_if(reported, [&](std::uint64_t id) { return !live.count(id); });
        }
        if (why.empty()) return;
        std::string json;
        const Diagnosis d = build_diagnosis(why, s.report_path.empty() ? nullptr : &json);
        detail::log_error(d.text);
        write_report_file(json);
    }

    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::thread thread_;  // last: it starts running in the constructor
};

std::atomic<bool> g_started{false};

}  // namespace

bool watchdog_wanted() noexcept {
    static const bool wanted = [] {
        try {
            return settings().timeout_s > 0 || !settings().report_path.empty();
        } catch (...) {
            return false;
        }
    }();
    return wanted;
}

void ensure_watchdog() noexcept {
    if (g_started.load(std::memory_order_acquire) || !watchdog_wanted()) return;
    static std::once_flag once;
    try {
        std::call_once(once, [] {
            if (!settings().report_path.empty()) {
                struct sigaction old {};
                if (::sigaction(SIGUSR1, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
                    struct sigaction sa {};
                    sa.sa_handler = on_sigusr1;
                    sigemptyset(&sa.sa_mask);
                    sa.sa_flags = SA_RESTART;
                    ::sigaction(SIGUSR1, &sa, nullptr);
                }
            }
            static Watchdog watchdog;
            g_started.store(true, std::memory_order_release);
        });
    } catch (...) {
        detail::log_error("[keel::diagnose] could not start the hang watch");
    }
}

void write_report_file(const std::string& json) noexcept {
    const std::string& path = settings().report_path;
    if (path.empty() || json.empty()) return;
    try {
        const std::string tmp = path + ".tmp";
        std::FILE* f = std::fopen(tmp.c_str(), "w");
        if (f == nullptr) {
            detail::log_error("[keel::diagnose] cannot write KEEL_HANG_REPORT " + path);
            return;
        }
        std::fwrite(json.data(), 1, json.size(), f);
        std::fclose(f);
        if (std::rename(tmp.c_str(), path.c_str()) != 0)
            detail::log_error("[keel::diagnose] cannot write KEEL_HANG_REPORT " + path);
    } catch (...) {
    }
}

}  // namespace keel::doctor
