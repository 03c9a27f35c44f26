// Stress: several host threads drive several shared streams
// with copies (pageable and pinned host memory), kernels, events and
// cross-stream waits on random sizes, and check every byte that comes back
// against a checksum computed on the host. Zero corruption, no error, and
// every allocation returned at the end (device_memory_info and the shutdown
// report agree). Bounded in time: KEEL_STRESS_SECONDS makes it longer.
#include "cpu_test.hpp"
#include "stress_util.hpp"

#include <cstring>
#include <random>

namespace keel::cpu::testing {
namespace {

constexpr int kThreads = 3;
constexpr int kStreams = 4;
constexpr int kInFlight = 3;

// One unit of work, from upload to verified download.
struct Job {
    size_t floats = 0;
    std::vector<float> input;
    std::vector<float> result;
    void* pinned_in = nullptr;  // used instead of `input` for some jobs
    keel_device_addr a = 0, b = 0;
    keel_event done = nullptr;
    float alpha = 0;
    bool active = false;
};

class CpuStress : public CpuPluginTest, public ::testing::WithParamInterface<bool> {
    ScopedEnv::Vars environment() const override {
        if (!GetParam()) return {};
        return {{"KEEL_CPU_CHECK", "1"}, {"KEEL_CPU_DELAY", "random:200"}, {"KEEL_CPU_SEED", "42"}};
    }
};

TEST_P(CpuStress, CopiesKernelsAndWaitsAcrossThreadsNeverCorruptAByte) {
    std::vector<keel_stream> streams;
    for (int i = 0; i < kStreams; ++i) streams.push_back(stream());
    keel_kernel fill = nullptr, axpy = nullptr;
    KEEL_ASSERT_OK(api().kernel_get(dev(), "fill", &fill));
    KEEL_ASSERT_OK(api().kernel_get(dev(), "axpy", &axpy));
    const double seconds = stress_seconds(1.5);
    Watchdog watchdog(std::chrono::seconds(90 + static_cast<int>(seconds * 4)), "copy/kernel stress");
    std::atomic<uint64_t> errors{0}, corrupt_bytes{0}, verified{0};
    std::mutex first_error_mutex;
    std::string first_error;
    auto note = [&](std::optional<CError> e) {
        if (!e) return;
        ++errors;
        std::lock_guard lock(first_error_mutex);
        if (first_error.empty()) first_error = e->message;
    };

    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            std::mt19937_64 rng(99 + t);
            Job jobs[kInFlight];
            for (auto& j : jobs) note(take(api().event_create(dev(), 0, &j.done)));
            auto finish = [&](Job& j) {
                note(take(api().event_synchronize(j.done)));
                // b = alpha * input + fill(alpha)... see start(): b = alpha * a + alpha.
                const float* in = j.pinned_in ? static_cast<const float*>(j.pinned_in) : j.input.data();
                for (size_t i = 0; i < j.floats; ++i) {
                    const float want = j.alpha * in[i] + j.alpha;
                    if (std::memcmp(&want, &j.result[i], sizeof want) != 0) corrupt_bytes += sizeof want;
                }
                verified += j.floats * sizeof(float);
                note(take(api().device_free(dev(), j.a)));
                note(take(api().device_free(dev(), j.b)));
                if (j.pinned_in) note(take(api().host_free(dev(), j.pinned_in)));
                j.pinned_in = nullptr;
                j.active = false;
            };
            auto start = [&](Job& j) {
                j.floats = 1 + rng() % (rng() % 8 == 0 ? 300000 : 3000);
                const size_t bytes = j.floats * sizeof(float);
                j.alpha = static_cast<float>(1 + rng() % 7);
                float* in = nullptr;
                if (rng() % 3 == 0) {
                    note(take(api().host_alloc(dev(), bytes, &j.pinned_in)));
                    in = static_cast<float*>(j.pinned_in);
                } else {
                    j.input.resize(j.floats);
                    in = j.input.data();
                }
                for (size_t i = 0; i < j.floats; ++i) in[i] = static_cast<float>(rng() % 1000) - 500.0f;
                j.result.assign(j.floats, -1.0f);
                note(take(api().device_alloc(dev(), bytes, &j.a)));
                note(take(api().device_alloc(dev(), bytes, &j.b)));
                keel_stream s1 = streams[rng() % kStreams];
                keel_stream s2 = streams[rng() % kStreams];
                // s1: upload a; fill b with alpha.  s2: wait for s1, b += alpha * a, download b.
                note(take(api().memcpy_h2d(s1, j.a, in, bytes)));
                const LaunchArgs fl({buffer_arg(j.b, bytes), f32_arg(j.alpha)});
                note(take(api().kernel_launch(s1, fill, fl.get())));
                note(take(api().event_record(j.done, s1)));
                note(take(api().stream_wait_event(s2, j.done)));
                const LaunchArgs al({f32_arg(j.alpha), buffer_arg(j.a, bytes), buffer_arg(j.b, bytes)});
                note(take(api().kernel_launch(s2, axpy, al.get())));
                if (rng() % 2 == 0) {
                    // Bounce through a third stream with a device-to-device copy.
                    keel_stream s3 = streams[rng() % kStreams];
                    note(take(api().event_record(j.done, s2)));
                    note(take(api().stream_wait_event(s3, j.done)));
                    note(take(api().memcpy_d2d(s3, j.a, j.b, bytes)));
                    note(take(api().memcpy_d2h(s3, j.result.data(), j.a, bytes)));
                    note(take(api().event_record(j.done, s3)));
                } else {
                    note(take(api().memcpy_d2h(s2, j.result.data(), j.b, bytes)));
                    note(take(api().event_record(j.done, s2)));
                }
                j.active = true;
            };
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
            for (uint64_t n = 0; std::chrono::steady_clock::now() < deadline; ++n) {
                Job& j = jobs[n % kInFlight];
                if (j.active) finish(j);
                start(j);
            }
            for (auto& j : jobs)
                if (j.active) finish(j);
            for (auto& j : jobs) note(take(api().event_destroy(j.done)));
        });
    }
    for (auto& th : threads) th.join();

    EXPECT_EQ(errors.load(), 0u) << first_error;
    EXPECT_EQ(corrupt_bytes.load(), 0u);
    EXPECT_GT(verified.load(), 0u);
    uint64_t free = 0, total = 0;
    KEEL_ASSERT_OK(api().device_memory_info(dev(), &free, &total));
    EXPECT_EQ(free, total) << "device memory not returned";
    for (keel_stream s : streams) KEEL_ASSERT_OK(api().stream_destroy(s));
    streams_.clear();
    plugin().shutdown();
    for (const auto& log : plugin().logs()) EXPECT_LT(log.level, KEEL_LOG_WARN) << log.message;
    RecordProperty("verified_bytes", std::to_string(verified.load()));
}

INSTANTIATE_TEST_SUITE_P(CheckerOffAndOn, CpuStress, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "checker_on" : "checker_off"; });

}  // namespace
}  // namespace keel::cpu::testing
