// sync_latency: how long host <-> stream and stream <-> stream synchronisation
// takes on a device, side by side with thread hand-off baselines measured in
// the same run. Works on any device (`--device cuda:0` too).
//
// Two regimes: "active" repeats each operation back to back, so workers are
// awake; "parked" sleeps --park-us before each repetition, longer than any
// spin window, so every hand-off has to wake a parked thread.
//
// Rows that time what happens between two streams take their stamps on the
// streams' own clock: timing events recorded on them (on the CPU device the
// worker stamps them as it reaches the record; on a GPU the GPU does). A
// host function's stamp is not that: on CUDA it runs on a driver thread,
// not on the stream. A device without event timing prints n/a for them.
#include "baselines.hpp"

#include <keel/keel.hpp>

#include <keel/tools/cli.hpp>

#include <optional>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using keel::Result;

// A measured time, or why this device cannot measure it.
struct Figure {
    double ns = 0;
    std::string unavailable;  // non-empty: n/a, and why

    static Figure none(std::string why) { return Figure{0, std::move(why)}; }
    [[nodiscard]] bool measured() const noexcept { return unavailable.empty(); }
};

struct Row {
    std::string what;
    Figure keel;
    std::string baseline;
    double baseline_ns;  // 0 = no baseline
    double goal_ratio;   // 0 = no ratio goal
    double ratio = 0;    // 0 = keel_ns / baseline_ns
};

// Times `keel` and `baseline` alternately in `slices` slices, so that both
// see the same phases of a shared machine; returns the medians and the
// median of the per-slice ratios (keel n/a in any slice: n/a).
struct Paired {
    Figure keel;
    double baseline_ns = 0, ratio = 0;
};
template <class Keel, class Baseline>
Result<Paired> paired(int slices, Keel&& keel, Baseline&& baseline) {
    std::vector<double> k, b, r;
    // Each side starts after the other's threads have parked.
    const auto settle = [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); };
    for (int i = 0; i < slices; ++i) {
        settle();
        b.push_back(baseline());
        settle();
        KEEL_TRY_ASSIGN(Figure f, keel());
        if (!f.measured()) return Paired{std::move(f), b.back(), 0};
        k.push_back(f.ns);
        r.push_back(k.back() / b.back());
    }
    auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    return Paired{Figure{median(k), {}}, median(b), median(r)};
}

double ns_since(Clock::time_point start, std::size_t n) {
    return std::chrono::duration<double, std::nano>(Clock::now() - start).count() /
           static_cast<double>(n);
}

// Runs `once` `n` times; in the parked regime sleeps before each, timing only `once`.
Result<double> time_each(std::size_t n, std::chrono::microseconds park,
                         const std::function<Result<void>()>& once) {
    double total_ns = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (park.count() > 0) std::this_thread::sleep_for(park);
        auto start = Clock::now();
        KEEL_TRY(once());
        total_ns += ns_since(start, 1);
    }
    return total_ns / static_cast<double>(n);
}

double process_cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto secs = [](timeval t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
    return secs(usage.ru_utime) + secs(usage.ru_stime);
}

// Spins briefly, then yields, so that on a machine with few cores the
// waiting host thread does not starve the stream workers it waits for.
template <class Done>
void wait_until(Done done) {
    for (int spins = 0; !done(); ++spins) {
        if (spins > 256) std::this_thread::yield();
    }
}

// Steady-clock nanoseconds, for stamps taken on stream threads.
std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// Holds stream `a` back until opened, so that the host can enqueue a batch of
// work for `a` and `b` that the streams then run without it. Destruction
// opens it and waits for both streams: declared after the locals the batch
// refers to, it keeps an early error return from leaving a worker waiting or
// running on dead locals.
class StreamGate {
public:
    StreamGate(const keel::Stream& a, const keel::Stream& b) : a_(a), b_(b) {}
    StreamGate(const StreamGate&) = delete;
    StreamGate& operator=(const StreamGate&) = delete;
    ~StreamGate() {
        open();
        (void)a_.synchronize();
        (void)b_.synchronize();
    }

    [[nodiscard]] Result<void> hold() const {
        return a_.enqueue_host_func([flag = open_] {
            while (!flag->load(std::memory_order_acquire)) std::this_thread::yield();
        });
    }
    void open() { open_->store(true, std::memory_order_release); }

private:
    const keel::Stream& a_;
    const keel::Stream& b_;
    std::shared_ptr<std::atomic<bool>> open_ = std::make_shared<std::atomic<bool>>(false);
};

struct Bench {
    keel::Device device;
    keel::Stream a;
    keel::Stream b;
    keel::Event event;
    keel::RawBuffer buffer;  // one scratch allocation every stream writes: not stream-ordered
    std::chrono::microseconds park;
    std::size_t active_iters;
    std::size_t parked_iters;

    // Host enqueues many tiny operations; the stream drains them behind its back.
    Result<double> enqueue_ns(std::size_t ops) {
        constexpr std::size_t batch = 1024;
        KEEL_TRY_ASSIGN(auto tiny, buffer.view(0, 4));
        double total = 0;
        std::size_t done = 0;
        while (done < ops) {
            auto start = Clock::now();
            for (std::size_t i = 0; i < batch; ++i) KEEL_TRY(a.memset(tiny, 0));
            total += ns_since(start, 1);
            done += batch;
            KEEL_TRY(a.synchronize());  // untimed: keeps the queue from growing without bound
        }
        return total / static_cast<double>(done);
    }

    // A runs an op and records, B waits on the device, B's next operation
    // runs (seen by the host). A gets real work first, so that B's wait is a
    // real hand-off from A's worker and not an already-complete event.
    Result<double> fence_round_trip_ns(bool parked) {
        KEEL_TRY_ASSIGN(auto tiny, buffer.view(0, 4));
        std::atomic<std::uint64_t> reached{0};
        std::uint64_t round = 0;
        auto once = [&]() -> Result<void> {
            std::uint64_t mine = ++round;
            KEEL_TRY(a.memset(tiny, 3));
            KEEL_TRY(event.record(a));
            KEEL_TRY(b.wait(event));
            KEEL_TRY(b.enqueue_host_func([&reached, mine] {
                reached.store(mine, std::memory_order_release);
            }));
            wait_until([&] { return reached.load(std::memory_order_acquire) == mine; });
            return keel::ok();
        };
        return time_each(parked ? parked_iters : active_iters, parked ? park : std::chrono::microseconds(0), once);
    }

    // Why rows stamped on the streams' clock cannot be measured here ("" when they can).
    [[nodiscard]] std::string no_stream_clock() const {
        return device.has(keel::DeviceCapability::event_timing) ? "" : "n/a: the device has no event timing";
    }

    // The device-side part of a fence alone: from A's record (after a real
    // operation) to B's next operation past its wait, stamped by timing
    // events on the streams, so the host's own wake-up is not counted.
    Result<Figure> fence_hand_off_ns(bool parked) {
        if (std::string why = no_stream_clock(); !why.empty()) return Figure::none(why);
        KEEL_TRY_ASSIGN(auto tiny, buffer.view(0, 4));
        KEEL_TRY_ASSIGN(keel::Event sent, keel::Event::create(device, keel::EventTiming::on));
        KEEL_TRY_ASSIGN(keel::Event received, keel::Event::create(device, keel::EventTiming::on));
        double total = 0;
        const std::size_t n = parked ? parked_iters : active_iters;
        for (std::size_t i = 0; i < n; ++i) {
            if (parked) std::this_thread::sleep_for(park);
            KEEL_TRY(a.memset(tiny, 3));
            KEEL_TRY(sent.record(a));
            KEEL_TRY(b.wait(sent));
            KEEL_TRY(received.record(b));
            KEEL_TRY(received.synchronize());
            KEEL_TRY_ASSIGN(float ms, keel::Event::elapsed_ms(sent, received));
            total += 1e6 * static_cast<double>(ms);
        }
        return Figure{total / static_cast<double>(n), {}};
    }

    // The bare fence ping-pong: A waits for B's record, B for A's, nothing
    // else on either stream, so each hand-off is one cross-stream wait. The
    // host enqueues `rounds` behind a gate and opens it; timing events on A
    // stamp the start of the first round and the end of the last. If A ran
    // past its gate before it opened, the streams went at the host's
    // enqueue pace, not their own: n/a rather than a wrong figure.
    Result<Figure> fence_ping_pong_ns(std::size_t rounds, keel::Event& back) {
        if (std::string why = no_stream_clock(); !why.empty()) return Figure::none(why);
        KEEL_TRY_ASSIGN(keel::Event start, keel::Event::create(device, keel::EventTiming::on));
        KEEL_TRY_ASSIGN(keel::Event end, keel::Event::create(device, keel::EventTiming::on));
        StreamGate gate(a, b);
        KEEL_TRY(gate.hold());
        KEEL_TRY(start.record(a));
        KEEL_TRY(event.record(a));
        for (std::size_t i = 0; i < rounds; ++i) {
            KEEL_TRY(b.wait(event));
            KEEL_TRY(back.record(b));
            KEEL_TRY(a.wait(back));
            KEEL_TRY(event.record(a));
        }
        KEEL_TRY(end.record(a));
        KEEL_TRY_ASSIGN(const bool ran_ahead, start.query());
        gate.open();
        // Block at once (an event wait parks without spinning past the spin
        // window): a spinning host would take a core from the two streams.
        KEEL_TRY(end.synchronize());
        KEEL_TRY(b.synchronize());
        if (ran_ahead)
            return Figure::none("n/a: the stream ran past its host-function gate, so the rounds went at the "
                                "host's enqueue pace");
        KEEL_TRY_ASSIGN(float ms, keel::Event::elapsed_ms(start, end));
        return Figure{1e6 * static_cast<double>(ms) / static_cast<double>(rounds), {}};
    }

    // Streams ping-ponging through fences with no host in the loop, as the
    // baseline threads do: A records, B waits, B records, A waits, and so on.
    // The host enqueues the rounds behind a gate, opens it and blocks in
    // synchronize, so only the two stream threads run. Each side stamps when
    // it resumes and again right before it records; parked, it sleeps
    // `park` in between, so the other side has parked by the time the fence
    // arrives and must be woken. Returns the mean round trip A -> B -> A
    // (the sleeps are outside the stamps).
    Result<Figure> stream_ping_pong_ns(std::size_t rounds, std::chrono::microseconds pause, keel::Event& back) {
        struct Stamps {
            std::int64_t resumed = 0, sent = 0;
        };
        std::vector<Stamps> on_a(rounds), on_b(rounds);
        auto turn = [pause](Stamps& s) {
            s.resumed = now_ns();
            if (pause.count() > 0) std::this_thread::sleep_for(pause);
            s.sent = now_ns();
        };
        StreamGate gate(a, b);
        KEEL_TRY(gate.hold());
        for (std::size_t i = 0; i < rounds; ++i) {
            KEEL_TRY(a.enqueue_host_func([&turn, s = &on_a[i]] { turn(*s); }));
            KEEL_TRY(event.record(a));
            KEEL_TRY(b.wait(event));
            KEEL_TRY(b.enqueue_host_func([&turn, s = &on_b[i]] { turn(*s); }));
            KEEL_TRY(back.record(b));
            KEEL_TRY(a.wait(back));
        }
        gate.open();
        KEEL_TRY(a.synchronize());
        KEEL_TRY(b.synchronize());
        double total = 0;
        for (std::size_t i = 0; i + 1 < rounds; ++i)
            total += static_cast<double>((on_b[i].resumed - on_a[i].sent) + (on_a[i + 1].resumed - on_b[i].sent));
        return Figure{total / static_cast<double>(rounds - 1), {}};
    }

    // One tiny operation, then the host blocks on an event recorded after it.
    Result<double> event_wait_ns(bool parked) {
        KEEL_TRY_ASSIGN(auto tiny, buffer.view(0, 4));
        auto once = [&]() -> Result<void> {
            KEEL_TRY(a.memset(tiny, 1));
            KEEL_TRY(event.record(a));
            return event.synchronize();
        };
        return time_each(parked ? parked_iters : active_iters, parked ? park : std::chrono::microseconds(0), once);
    }

    // One tiny operation, then the host synchronises the stream.
    Result<double> stream_sync_ns(bool parked) {
        KEEL_TRY_ASSIGN(auto tiny, buffer.view(0, 4));
        auto once = [&]() -> Result<void> {
            KEEL_TRY(a.memset(tiny, 2));
            return a.synchronize();
        };
        return time_each(parked ? parked_iters : active_iters, parked ? park : std::chrono::microseconds(0), once);
    }
};

// CPU time (percent of one core) of the whole process while 8 streams sit idle.
Result<double> idle_cpu_percent(const keel::Device& device, std::chrono::microseconds park,
                                std::chrono::milliseconds window) {
    std::vector<keel::Stream> streams;
    KEEL_TRY_ASSIGN(auto buffer, keel::RawBuffer::allocate(device, 256));
    KEEL_TRY_ASSIGN(auto tiny, buffer.view(0, 4));
    for (int i = 0; i < 8; ++i) {
        KEEL_TRY_ASSIGN(auto s, keel::Stream::create(device));
        KEEL_TRY(s.memset(tiny, 0));  // wake its worker once
        KEEL_TRY(s.synchronize());
        streams.push_back(std::move(s));
    }
    std::this_thread::sleep_for(park);  // past the spin window
    double cpu0 = process_cpu_seconds();
    auto t0 = Clock::now();
    std::this_thread::sleep_for(window);
    double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    return 100.0 * (process_cpu_seconds() - cpu0) / wall;
}

void print_table(const std::string& device, const std::vector<Row>& rows) {
    std::printf("\nsync_latency on %s (times per operation; ratio = keel / baseline; the ratio goals are\n"
                "the CPU device's, whose streams are host threads: elsewhere the ratios are for information)\n\n",
                device.c_str());
    std::printf("| %-44s | %12s | %-26s | %12s | %7s | %-8s |\n", "measurement", "keel (ns)",
                "baseline", "baseline (ns)", "ratio", "goal");
    std::printf("|%s|%s|%s|%s|%s|%s|\n", std::string(46, '-').c_str(), std::string(14, '-').c_str(),
                std::string(28, '-').c_str(), std::string(14, '-').c_str(),
                std::string(9, '-').c_str(), std::string(10, '-').c_str());
    std::vector<std::string> notes;
    for (const Row& r : rows) {
        char keel[32] = "n/a";
        char ratio[32] = "-";
        char goal[32] = "-";
        if (r.keel.measured()) {
            std::snprintf(keel, sizeof keel, "%.1f", r.keel.ns);
            if (r.baseline_ns > 0)
                std::snprintf(ratio, sizeof ratio, "%.2f", r.ratio > 0 ? r.ratio : r.keel.ns / r.baseline_ns);
        } else {
            notes.push_back(r.what + ": " + r.keel.unavailable);
        }
        if (r.goal_ratio > 0) std::snprintf(goal, sizeof goal, "<= %.1fx", r.goal_ratio);
        std::printf("| %-44s | %12s | %-26s | %12.1f | %7s | %-8s |\n", r.what.c_str(), keel,
                    r.baseline.c_str(), r.baseline_ns, ratio, goal);
    }
    for (const std::string& n : notes) std::printf("  %s\n", n.c_str());
}

Result<void> run(const std::string& name, std::size_t iters, std::chrono::microseconds park,
                 std::chrono::milliseconds idle_window) {
    KEEL_TRY_ASSIGN(auto runtime, keel::Runtime::create());
    KEEL_TRY_ASSIGN(auto device, runtime.device(name));
    KEEL_TRY_ASSIGN(auto a, keel::Stream::create(device));
    KEEL_TRY_ASSIGN(auto b, keel::Stream::create(device));
    KEEL_TRY_ASSIGN(auto event, keel::Event::create(device));
    KEEL_TRY_ASSIGN(auto buffer, keel::RawBuffer::allocate(device, 256));
    Bench bench{device, std::move(a), std::move(b), std::move(event), std::move(buffer), park,
                iters, std::max<std::size_t>(iters / 100, 50)};

    const double spin = keel::samples::spin_ping_pong_ns(iters);
    const double condvar = keel::samples::condvar_ping_pong_ns(std::max<std::size_t>(iters / 10, 1000));

    // A host-clock figure (always measurable).
    const auto host = [](double ns) { return Figure{ns, {}}; };
    std::vector<Row> rows;
    rows.push_back({"baseline: spinning atomic ping-pong", host(spin), "-", 0, 0});
    rows.push_back({"baseline: mutex+condvar ping-pong", host(condvar), "-", 0, 0});
    KEEL_TRY_ASSIGN(double enqueue, bench.enqueue_ns(iters * 10));
    char enqueue_label[64];
    std::snprintf(enqueue_label, sizeof enqueue_label, "enqueue one op, one thread (%.1f M ops/s)",
                  1e3 / enqueue);
    rows.push_back({enqueue_label, host(enqueue), "goal <= 100 ns", 0, 0});
    KEEL_TRY_ASSIGN(double fence_active, bench.fence_round_trip_ns(false));
    rows.push_back({"fence round trip via host, workers active", host(fence_active), "spinning ping-pong", spin, 0});
    KEEL_TRY_ASSIGN(double fence_parked, bench.fence_round_trip_ns(true));
    rows.push_back({"fence round trip via host, workers parked", host(fence_parked), "condvar ping-pong", condvar, 0});
    KEEL_TRY_ASSIGN(Figure hand_off_active, bench.fence_hand_off_ns(false));
    rows.push_back({"fence hand-off A -> B (device side), active", hand_off_active, "spinning ping-pong", spin, 0});
    KEEL_TRY_ASSIGN(Figure hand_off_parked, bench.fence_hand_off_ns(true));
    rows.push_back({"fence hand-off A -> B (device side), parked", hand_off_parked, "condvar ping-pong", condvar, 0});
    // The goal rows: stream ping-pong and its baseline, alternating.
    KEEL_TRY_ASSIGN(auto back, keel::Event::create(device));
    const std::size_t pong_rounds = std::clamp<std::size_t>(iters / 20, 100, 2000);
    KEEL_TRY_ASSIGN(Paired fences_active,
                    paired(11, [&] { return bench.fence_ping_pong_ns(pong_rounds * 20, back); },
                           [&] { return keel::samples::spin_ping_pong_ns(pong_rounds * 20); }));
    rows.push_back({"stream ping-pong A <-> B, fences only, active", fences_active.keel,
                    "spinning ping-pong (paired)", fences_active.baseline_ns, 2.0, fences_active.ratio});
    KEEL_TRY_ASSIGN(Paired pong_active,
                    paired(11, [&] { return bench.stream_ping_pong_ns(pong_rounds, std::chrono::microseconds(0), back); },
                           [&] { return keel::samples::spin_ping_pong_ns(pong_rounds); }));
    rows.push_back({"  the same with a host function per hand-off", pong_active.keel, "spinning ping-pong (paired)",
                    pong_active.baseline_ns, 0, pong_active.ratio});
    // Sleeping 1 ms (20x the spin window) before each fence, so the other
    // side has parked; the baseline's threads sleep as long before each pass.
    const auto pong_pause = std::min(park, std::chrono::microseconds(1000));
    KEEL_TRY_ASSIGN(Paired pong_parked,
                    paired(11, [&] { return bench.stream_ping_pong_ns(21, pong_pause, back); },
                           [&] { return keel::samples::condvar_ping_pong_after_pause_ns(20, pong_pause); }));
    rows.push_back({"stream ping-pong A <-> B by fences, parked", pong_parked.keel, "condvar, same pauses (paired)",
                    pong_parked.baseline_ns, 1.2, pong_parked.ratio});
    KEEL_TRY_ASSIGN(double event_active, bench.event_wait_ns(false));
    rows.push_back({"host event wait after an op, active", host(event_active), "spinning ping-pong", spin, 0});
    KEEL_TRY_ASSIGN(double event_parked, bench.event_wait_ns(true));
    rows.push_back({"host event wait after an op, parked", host(event_parked), "condvar ping-pong", condvar, 0});
    KEEL_TRY_ASSIGN(double sync_active, bench.stream_sync_ns(false));
    rows.push_back({"stream synchronize after an op, active", host(sync_active), "spinning ping-pong", spin, 0});
    KEEL_TRY_ASSIGN(double sync_parked, bench.stream_sync_ns(true));
    rows.push_back({"stream synchronize after an op, parked", host(sync_parked), "condvar ping-pong", condvar, 0});
    print_table(name, rows);

    KEEL_TRY_ASSIGN(double idle, idle_cpu_percent(device, park, idle_window));
    std::printf("\nidle CPU of 8 idle streams after the spin window: %.2f%% of one core "
                "(process CPU time over %lld ms of sleep; goal ~0)\n",
                idle, static_cast<long long>(idle_window.count()));
    return keel::ok();
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"sync_latency: how long a host thread waits for a keel device's stream and event to\n"
                 "complete, active and parked, beside thread hand-off baselines (condvar, futex) measured\n"
                 "in the same run, and the idle CPU of parked streams.",
                 "sync_latency"};
    keel::cli::show_defaults(app);
    std::string device = "cpu:0";
    std::size_t iters = 20000;
    long park_us = 20000;
    long idle_ms = 1000;
    app.add_option("--device", device, "device name, e.g. cpu:0 or cuda:0");
    app.add_option("--iters", iters, "repetitions in the active regime (parked: iters/100, >= 50)")
        ->check(CLI::Range(std::size_t{1}, std::size_t{100'000'000}));
    app.add_option("--park-us", park_us, "sleep before each parked repetition, past any spin window")
        ->check(CLI::Range(0L, 10'000'000L));
    app.add_option("--idle-ms", idle_ms, "window over which idle CPU is measured")->check(CLI::Range(1L, 600'000L));
    if (const std::optional<int> code = keel::cli::parse(app, argc, argv)) return *code;

    Result<void> r = run(device, iters, std::chrono::microseconds(park_us), std::chrono::milliseconds(idle_ms));
    if (!r) {
        std::fprintf(stderr, "sync_latency: %s\n", r.error().message().c_str());
        return 1;
    }
    return 0;
}
