// Synchronisation stress: several host threads hammer enqueue, event record,
// cross-stream waits and both kinds of synchronize on shared streams, in the
// spinning and the parked regime. A deadlock or a lost wake-up trips the
// watchdog; an ordering bug shows as a host function seeing the wrong
// sequence number or a synchronize returning before its work ran.
#include "cpu_test.hpp"
#include "stress_util.hpp"

#include <random>

namespace keel::cpu::testing {
namespace {

constexpr int kThreads = 3;
constexpr int kStreams = 4;

// What the host functions update: per (thread, stream), the last sequence
// number run, and how many ran out of order.
struct Counters {
    std::atomic<uint64_t> last[kThreads][kStreams] = {};
    std::atomic<uint64_t> disorder{0};
};
Counters* g_counters = nullptr;

void* pack(int t, int s, uint64_t seq) {
    return reinterpret_cast<void*>((seq << 8) | (static_cast<uint64_t>(t) << 4) | static_cast<uint64_t>(s));
}
void count_fn(void* packed, keel_status) {
    const auto v = reinterpret_cast<uint64_t>(packed);
    const int t = static_cast<int>((v >> 4) & 0xF), s = static_cast<int>(v & 0xF);
    const uint64_t seq = v >> 8;
    auto& last = g_counters->last[t][s];
    if (last.load(std::memory_order_relaxed) + 1 != seq) g_counters->disorder.fetch_add(1);
    last.store(seq, std::memory_order_release);
}

class CpuSyncStress : public CpuPluginTest, public ::testing::WithParamInterface<const char*> {
    ScopedEnv::Vars environment() const override { return {{"KEEL_CPU_SPIN_US", GetParam()}}; }
};

TEST_P(CpuSyncStress, NeverDeadlocksLosesAWakeUpOrReordersWork) {
    Counters counters;
    g_counters = &counters;
    std::vector<keel_stream> streams;
    for (int i = 0; i < kStreams; ++i) streams.push_back(stream());
    const double seconds = stress_seconds(0.7);
    Watchdog watchdog(std::chrono::seconds(60 + static_cast<int>(seconds * 4)), "sync stress");
    std::atomic<uint64_t> failures{0}, syncs{0}, ops{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            std::mt19937 rng(1234 + t);
            keel_event events[2];
            for (auto& e : events) take(api().event_create(dev(), 0, &e));
            uint64_t enqueued[kStreams] = {};
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
            while (std::chrono::steady_clock::now() < deadline) {
                for (int burst = 0; burst < 64; ++burst) {
                    const int s = static_cast<int>(rng() % kStreams);
                    const int action = static_cast<int>(rng() % 100);
                    if (action < 60) {
                        if (take(api().stream_enqueue_host_func(streams[s], &count_fn, pack(t, s, ++enqueued[s]))))
                            ++failures;
                        ++ops;
                    } else if (action < 80) {
                        keel_event e = events[rng() % 2];
                        if (take(api().event_record(e, streams[s]))) ++failures;
                        if (take(api().stream_wait_event(streams[rng() % kStreams], e))) ++failures;
                    } else if (action < 90) {
                        if (take(api().stream_synchronize(streams[s]))) ++failures;
                        // Everything this thread enqueued on s before the call has run.
                        if (counters.last[t][s].load(std::memory_order_acquire) != enqueued[s]) ++failures;
                        ++syncs;
                    } else {
                        keel_event e = events[0];
                        const uint64_t before = enqueued[s];
                        if (take(api().event_record(e, streams[s]))) ++failures;
                        if (take(api().event_synchronize(e))) ++failures;
                        if (counters.last[t][s].load(std::memory_order_acquire) < before) ++failures;
                        ++syncs;
                    }
                }
            }
            for (auto& e : events) take(api().event_destroy(e));
        });
    }
    for (auto& th : threads) th.join();
    for (keel_stream s : streams) KEEL_ASSERT_OK(api().stream_synchronize(s));
    EXPECT_EQ(failures.load(), 0u);
    EXPECT_EQ(counters.disorder.load(), 0u);
    EXPECT_GT(syncs.load(), 10u);
    RecordProperty("ops", std::to_string(ops.load()));
    g_counters = nullptr;
}

INSTANTIATE_TEST_SUITE_P(SpinRegimes, CpuSyncStress, ::testing::Values("0", "20", "200"),
                         [](const auto& info) { return std::string("spin_us_") + info.param; });

}  // namespace
}  // namespace keel::cpu::testing
