// The checker's cost, side by side in one run: checker off, on without
// happens-before checking (KEEL_CPU_CHECK=1 KEEL_CPU_CHECK_RACES=0), and on
// with it (KEEL_CPU_CHECK=1), no delays.
//
//   keel_cpu_bench --benchmark_filter=Checker
#include "bench_util.hpp"

#include <keel/testing/launch_args.hpp>

#include <vector>

namespace keel::cpu::bench {
namespace {

ScopedEnv::Vars checker_env(int64_t mode) {
    switch (mode) {
        case 0: return {{"KEEL_CPU_CHECK", "0"}};
        case 1: return {{"KEEL_CPU_CHECK", "1"}, {"KEEL_CPU_CHECK_RACES", "0"}};
        default: return {{"KEEL_CPU_CHECK", "1"}, {"KEEL_CPU_CHECK_RACES", "1"}};
    }
}

void name_mode(benchmark::State& state) {
    static const char* const kNames[] = {"off", "on_without_hb", "on_with_hb"};
    state.SetLabel(kNames[state.range(0)]);
}

keel_kernel kernel(const keel_plugin_api& api, keel_device dev, const char* name) {
    keel_kernel k = nullptr;
    KEEL_BENCH_OK(api.kernel_get(dev, name, &k));
    return k;
}

// One item = one memcpy_h2d of 256 bytes (pinned source), one memset_d8 or
// one memcpy_d2h; 3 x 256 items per batch, drained with stream_synchronize.
void BM_Checker_CopiesOneStream(benchmark::State& state) {
    name_mode(state);
    auto p = load(checker_env(state.range(0)));
    const keel_plugin_api& api = p->api();
    keel_stream s = nullptr;
    keel_device_addr a = 0;
    KEEL_BENCH_OK(api.stream_create(p->device(), 0, &s));
    KEEL_BENCH_OK(api.device_alloc(p->device(), 1 << 16, &a));
    void* host = nullptr;
    KEEL_BENCH_OK(api.host_alloc(p->device(), 1 << 16, &host));
    std::vector<unsigned char> back(1 << 16);
    for (auto _ : state) {
        for (int i = 0; i < 256; ++i) {
            KEEL_BENCH_OK(api.memcpy_h2d(s, a + 256 * i, static_cast<char*>(host) + 256 * i, 256));
            KEEL_BENCH_OK(api.memset_d8(s, a + 256 * i, 1, 64));
            KEEL_BENCH_OK(api.memcpy_d2h(s, back.data() + 256 * i, a + 256 * i, 256));
        }
        KEEL_BENCH_OK(api.stream_synchronize(s));
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 256 * 3);
    KEEL_BENCH_OK(api.host_free(p->device(), host));
    KEEL_BENCH_OK(api.device_free(p->device(), a));
    KEEL_BENCH_OK(api.stream_destroy(s));
}
BENCHMARK(BM_Checker_CopiesOneStream)->ArgName("mode")->DenseRange(0, 2)->UseRealTime();

// A producer/consumer pipeline as a framework issues it: the producer fills
// a 4 KiB buffer (kernel) and records an event, the consumer waits for it
// and accumulates it with axpy. One item = one fill + record + wait + axpy.
void BM_Checker_KernelsTwoStreams(benchmark::State& state) {
    name_mode(state);
    constexpr int kSteps = 64;
    constexpr uint64_t kBytes = 4096;
    auto p = load(checker_env(state.range(0)));
    const keel_plugin_api& api = p->api();
    keel_device dev = p->device();
    keel_stream producer = nullptr, consumer = nullptr;
    KEEL_BENCH_OK(api.stream_create(dev, 0, &producer));
    KEEL_BENCH_OK(api.stream_create(dev, 0, &consumer));
    std::vector<keel_device_addr> x(kSteps);
    keel_device_addr y = 0;
    for (auto& a : x) KEEL_BENCH_OK(api.device_alloc(dev, kBytes, &a));
    KEEL_BENCH_OK(api.device_alloc(dev, kBytes, &y));
    std::vector<keel_event> ready(kSteps);
    for (auto& e : ready) KEEL_BENCH_OK(api.event_create(dev, KEEL_EVENT_DEFAULT, &e));
    keel_event consumed = nullptr;
    KEEL_BENCH_OK(api.event_create(dev, KEEL_EVENT_DEFAULT, &consumed));
    const keel_kernel fill = kernel(api, dev, "fill"), axpy = kernel(api, dev, "axpy");
    const keel_kernel_arg one = keel::testing::f32_arg(1.0f);
    for (auto _ : state) {
        // The producer may overwrite x[i] only after the last batch's consumer read it.
        KEEL_BENCH_OK(api.stream_wait_event(producer, consumed));
        for (int i = 0; i < kSteps; ++i) {
            const keel::testing::LaunchArgs fl({keel::testing::buffer_arg(x[i], kBytes), one});
            KEEL_BENCH_OK(api.kernel_launch(producer, fill, fl.get()));
            KEEL_BENCH_OK(api.event_record(ready[i], producer));
            KEEL_BENCH_OK(api.stream_wait_event(consumer, ready[i]));
            const keel::testing::LaunchArgs al(
                {one, keel::testing::buffer_arg(x[i], kBytes), keel::testing::buffer_arg(y, kBytes)});
            KEEL_BENCH_OK(api.kernel_launch(consumer, axpy, al.get()));
        }
        KEEL_BENCH_OK(api.event_record(consumed, consumer));
    }
    KEEL_BENCH_OK(api.stream_synchronize(consumer));
    KEEL_BENCH_OK(api.stream_synchronize(producer));
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kSteps);
    for (auto e : ready) KEEL_BENCH_OK(api.event_destroy(e));
    KEEL_BENCH_OK(api.event_destroy(consumed));
    for (auto a : x) KEEL_BENCH_OK(api.device_free(dev, a));
    KEEL_BENCH_OK(api.device_free(dev, y));
    KEEL_BENCH_OK(api.stream_destroy(producer));
    KEEL_BENCH_OK(api.stream_destroy(consumer));
}
BENCHMARK(BM_Checker_KernelsTwoStreams)->ArgName("mode")->DenseRange(0, 2)->UseRealTime();

// What one checked access costs with n live ranges remembered in one
// allocation (happens-before on): n writes to disjoint 64-byte ranges,
// alternating between two streams so that neighbours never merge; then
// each item is one more memset into one of them, spread over the whole
// allocation. Expect O(log n).
void BM_Checker_AccessWithLiveRanges(benchmark::State& state) {
    const auto ranges = static_cast<uint64_t>(state.range(0));
    auto p = load(checker_env(2));
    const keel_plugin_api& api = p->api();
    keel_device dev = p->device();
    keel_stream s[2] = {nullptr, nullptr};
    for (auto& st : s) KEEL_BENCH_OK(api.stream_create(dev, 0, &st));
    keel_device_addr a = 0;
    KEEL_BENCH_OK(api.device_alloc(dev, ranges * 64, &a));
    for (uint64_t i = 0; i < ranges; ++i) KEEL_BENCH_OK(api.memset_d8(s[i % 2], a + 64 * i, 1, 64));
    for (auto& st : s) KEEL_BENCH_OK(api.stream_synchronize(st));
    uint64_t i = 0;
    for (auto _ : state) {
        for (int k = 0; k < 256; ++k) {
            i = (i + 7919) % ranges;  // a stride prime to n: every range, far apart
            KEEL_BENCH_OK(api.memset_d8(s[i % 2], a + 64 * i, 2, 64));
        }
        state.PauseTiming();
        for (auto& st : s) KEEL_BENCH_OK(api.stream_synchronize(st));
        state.ResumeTiming();
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 256);
    KEEL_BENCH_OK(api.device_free(dev, a));
    for (auto& st : s) KEEL_BENCH_OK(api.stream_destroy(st));
}
BENCHMARK(BM_Checker_AccessWithLiveRanges)->ArgName("ranges")->Arg(1 << 10)->Arg(1 << 14)->Arg(1 << 17)->UseRealTime();

}  // namespace
}  // namespace keel::cpu::bench
