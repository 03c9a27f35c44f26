// The checker's cost: enqueue + execute of small copies and memsets, with
// checker mode off and on (KEEL_CPU_CHECK=1, no delays).
//
//   keel_cpu_bench --benchmark_filter=Checker
#include "bench_util.hpp"

#include <vector>

namespace keel::cpu::bench {
namespace {

// One item = one memcpy_h2d of 256 bytes, or one memset_d8, or one
// memcpy_d2h; 3 x 256 items per batch, drained with stream_synchronize.
void BM_Checker_EnqueueAndExecute(benchmark::State& state) {
    const bool on = state.range(0) != 0;
    auto p = load(on ? ScopedEnv::Vars{{"KEEL_CPU_CHECK", "1"}} : ScopedEnv::Vars{{"KEEL_CPU_CHECK", "0"}});
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
BENCHMARK(BM_Checker_EnqueueAndExecute)->ArgName("checker")->Arg(0)->Arg(1)->UseRealTime();

}  // namespace
}  // namespace keel::cpu::bench
