// Synchronisation figures for the CPU plugin, with baselines measured in the same
// run: two-thread ping-pong with a spinning atomic and with mutex+condvar.
//
//   keel_cpu_bench --benchmark_filter='Baseline|Enqueue|Fence|Wait|Idle'
//
// "parked:0" (active) = workers and host waiters never park
// (KEEL_CPU_SPIN_US=forever); "parked:1" = no spin window
// (KEEL_CPU_SPIN_US=0): every hand-off goes through a futex wake, which is
// what a stream sees once its spin window has passed.
#include "bench_util.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace keel::cpu::bench {
namespace {

void relax() {
#if defined(__x86_64__)
    _mm_pause();
#endif
}

// ---- baselines ---------------------------------------------------------------

void BM_Baseline_SpinPingPong(benchmark::State& state) {
    std::atomic<uint64_t> ping{0}, pong{0};
    std::atomic<bool> stop{false};
    std::thread partner([&] {
        uint64_t seen = 0;
        while (!stop.load(std::memory_order_relaxed)) {
            uint64_t v = ping.load(std::memory_order_acquire);
            if (v != seen) {
                seen = v;
                pong.store(v, std::memory_order_release);
            } else {
                relax();
            }
        }
    });
    uint64_t n = 0;
    for (auto _ : state) {
        ping.store(++n, std::memory_order_release);
        while (pong.load(std::memory_order_acquire) != n) relax();
    }
    stop = true;
    partner.join();
}
BENCHMARK(BM_Baseline_SpinPingPong)->UseRealTime();

void BM_Baseline_CondvarPingPong(benchmark::State& state) {
    std::mutex m;
    std::condition_variable cv;
    uint64_t ping = 0, pong = 0;
    bool stop = false;
    std::thread partner([&] {
        std::unique_lock lock(m);
        uint64_t seen = 0;
        for (;;) {
            cv.wait(lock, [&] { return stop || ping != seen; });
            if (stop) return;
            seen = ping;
            pong = seen;
            cv.notify_all();
        }
    });
    uint64_t n = 0;
    for (auto _ : state) {
        std::unique_lock lock(m);
        ping = ++n;
        cv.notify_all();
        cv.wait(lock, [&] { return pong == n; });
    }
    {
        std::lock_guard lock(m);
        stop = true;
    }
    cv.notify_all();
    partner.join();
}
BENCHMARK(BM_Baseline_CondvarPingPong)->UseRealTime();

// ---- enqueue cost ------------------------------------------------------------

void noop(void*, keel_status) {}

// Cost of one enqueue call from one host thread. The stream is drained
// every 4096 ops with the timer paused, so only the calls are timed.
void BM_Enqueue_HostFunc(benchmark::State& state) {
    auto p = load({});
    const keel_plugin_api& api = p->api();
    keel_stream s = nullptr;
    KEEL_BENCH_OK(api.stream_create(p->device(), 0, &s));
    uint64_t n = 0;
    for (auto _ : state) {
        KEEL_BENCH_OK(api.stream_enqueue_host_func(s, &noop, nullptr));
        if ((++n & 4095) == 0) {
            state.PauseTiming();
            KEEL_BENCH_OK(api.stream_synchronize(s));
            state.ResumeTiming();
        }
    }
    KEEL_BENCH_OK(api.stream_synchronize(s));
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
    KEEL_BENCH_OK(api.stream_destroy(s));
}
BENCHMARK(BM_Enqueue_HostFunc)->UseRealTime();

void BM_Enqueue_Memset64(benchmark::State& state) {
    auto p = load({});
    const keel_plugin_api& api = p->api();
    keel_stream s = nullptr;
    keel_device_addr a = 0;
    KEEL_BENCH_OK(api.stream_create(p->device(), 0, &s));
    KEEL_BENCH_OK(api.device_alloc(p->device(), 64, &a));
    uint64_t n = 0;
    for (auto _ : state) {
        KEEL_BENCH_OK(api.memset_d8(s, a, 1, 64));
        if ((++n & 4095) == 0) {
            state.PauseTiming();
            KEEL_BENCH_OK(api.stream_synchronize(s));
            state.ResumeTiming();
        }
    }
    KEEL_BENCH_OK(api.stream_synchronize(s));
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
    KEEL_BENCH_OK(api.device_free(p->device(), a));
    KEEL_BENCH_OK(api.stream_destroy(s));
}
BENCHMARK(BM_Enqueue_Memset64)->UseRealTime();

// ---- cross-stream fence round trip -------------------------------------------

const char* regime_spin(int64_t parked) { return parked ? "0" : "forever"; }

// A runs an op and records; B waits for the record and runs its next op;
// the host waits for that with event_synchronize, i.e. with the plugin's
// own spin-then-park policy (a pure pause loop on the host would hog a core
// of this 2-core machine and starve the workers it waits for).
void BM_Fence_RoundTrip(benchmark::State& state) {
    auto p = load({{"KEEL_CPU_SPIN_US", regime_spin(state.range(0))}});
    const keel_plugin_api& api = p->api();
    keel_stream a = nullptr, b = nullptr;
    keel_event ea = nullptr, eb = nullptr;
    KEEL_BENCH_OK(api.stream_create(p->device(), 0, &a));
    KEEL_BENCH_OK(api.stream_create(p->device(), 0, &b));
    KEEL_BENCH_OK(api.event_create(p->device(), 0, &ea));
    KEEL_BENCH_OK(api.event_create(p->device(), 0, &eb));
    for (auto _ : state) {
        KEEL_BENCH_OK(api.stream_enqueue_host_func(a, &noop, nullptr));
        KEEL_BENCH_OK(api.event_record(ea, a));
        KEEL_BENCH_OK(api.stream_wait_event(b, ea));
        KEEL_BENCH_OK(api.stream_enqueue_host_func(b, &noop, nullptr));
        KEEL_BENCH_OK(api.event_record(eb, b));
        KEEL_BENCH_OK(api.event_synchronize(eb));
    }
    KEEL_BENCH_OK(api.event_destroy(ea));
    KEEL_BENCH_OK(api.event_destroy(eb));
    KEEL_BENCH_OK(api.stream_destroy(a));
    KEEL_BENCH_OK(api.stream_destroy(b));
}
BENCHMARK(BM_Fence_RoundTrip)->ArgName("parked")->Arg(0)->Arg(1)->UseRealTime();

// The same hand-off seen from the device: a timing event on A (taken when
// A reaches its record) and one on B (taken when B's op after the wait
// runs); reports their difference, so host wake-ups do not count.
void BM_Fence_DeviceSide(benchmark::State& state) {
    auto p = load({{"KEEL_CPU_SPIN_US", regime_spin(state.range(0))}});
    const keel_plugin_api& api = p->api();
    keel_stream a = nullptr, b = nullptr;
    keel_event ta = nullptr, tb = nullptr;
    KEEL_BENCH_OK(api.stream_create(p->device(), 0, &a));
    KEEL_BENCH_OK(api.stream_create(p->device(), 0, &b));
    KEEL_BENCH_OK(api.event_create(p->device(), KEEL_EVENT_TIMING, &ta));
    KEEL_BENCH_OK(api.event_create(p->device(), KEEL_EVENT_TIMING, &tb));
    for (auto _ : state) {
        KEEL_BENCH_OK(api.stream_enqueue_host_func(a, &noop, nullptr));
        KEEL_BENCH_OK(api.event_record(ta, a));
        KEEL_BENCH_OK(api.stream_wait_event(b, ta));
        KEEL_BENCH_OK(api.event_record(tb, b));
        KEEL_BENCH_OK(api.event_synchronize(tb));
        float ms = 0;
        KEEL_BENCH_OK(api.event_elapsed_time(ta, tb, &ms));
        state.SetIterationTime(static_cast<double>(ms) * 1e-3);
    }
    KEEL_BENCH_OK(api.event_destroy(ta));
    KEEL_BENCH_OK(api.event_destroy(tb));
    KEEL_BENCH_OK(api.stream_destroy(a));
    KEEL_BENCH_OK(api.stream_destroy(b));
}
BENCHMARK(BM_Fence_DeviceSide)->ArgName("parked")->Arg(0)->Arg(1)->UseManualTime();

// ---- host waits -------------------------------------------------------------------

// Host enqueues one op, records an event and waits for it (event_synchronize).
void BM_Wait_Event(benchmark::State& state) {
    auto p = load({{"KEEL_CPU_SPIN_US", regime_spin(state.range(0))}});
    const keel_plugin_api& api = p->api();
    keel_stream s = nullptr;
    keel_event e = nullptr;
    KEEL_BENCH_OK(api.stream_create(p->device(), 0, &s));
    KEEL_BENCH_OK(api.event_create(p->device(), 0, &e));
    for (auto _ : state) {
        KEEL_BENCH_OK(api.stream_enqueue_host_func(s, &noop, nullptr));
        KEEL_BENCH_OK(api.event_record(e, s));
        KEEL_BENCH_OK(api.event_synchronize(e));
    }
    KEEL_BENCH_OK(api.event_destroy(e));
    KEEL_BENCH_OK(api.stream_destroy(s));
}
BENCHMARK(BM_Wait_Event)->ArgName("parked")->Arg(0)->Arg(1)->UseRealTime();

// Host enqueues one op and synchronizes the stream.
void BM_Wait_StreamSynchronize(benchmark::State& state) {
    auto p = load({{"KEEL_CPU_SPIN_US", regime_spin(state.range(0))}});
    const keel_plugin_api& api = p->api();
    keel_stream s = nullptr;
    KEEL_BENCH_OK(api.stream_create(p->device(), 0, &s));
    for (auto _ : state) {
        KEEL_BENCH_OK(api.stream_enqueue_host_func(s, &noop, nullptr));
        KEEL_BENCH_OK(api.stream_synchronize(s));
    }
    KEEL_BENCH_OK(api.stream_destroy(s));
}
BENCHMARK(BM_Wait_StreamSynchronize)->ArgName("parked")->Arg(0)->Arg(1)->UseRealTime();

// ---- idle CPU -------------------------------------------------------------------------

double process_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// 8 streams each run one op, then sit idle past the default spin window
// (50 us); reports the process's CPU use while idle, in percent of one core.
void BM_Idle_EightStreams(benchmark::State& state) {
    auto p = load({});
    const keel_plugin_api& api = p->api();
    keel_stream streams[8];
    for (auto& s : streams) KEEL_BENCH_OK(api.stream_create(p->device(), 0, &s));
    double cpu = 0, wall = 0;
    for (auto _ : state) {
        for (auto& s : streams) KEEL_BENCH_OK(api.stream_enqueue_host_func(s, &noop, nullptr));
        for (auto& s : streams) KEEL_BENCH_OK(api.stream_synchronize(s));
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin window
        const double c0 = process_cpu_seconds();
        const auto w0 = std::chrono::steady_clock::now();
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        cpu += process_cpu_seconds() - c0;
        wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    }
    state.counters["idle_cpu_percent"] = 100.0 * cpu / wall;
    for (auto& s : streams) KEEL_BENCH_OK(api.stream_destroy(s));
}
BENCHMARK(BM_Idle_EightStreams)->Iterations(3)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace keel::cpu::bench
