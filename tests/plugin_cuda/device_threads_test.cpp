// Entries called from many threads at once, as the ABI allows.
#include "cuda_plugin_fixture.hpp"

#include <atomic>
#include <thread>
#include <vector>

namespace keel::cuda_test {
namespace {

using CudaThreads = CudaDeviceTest;

TEST_F(CudaThreads, ThreadsDriveTheirOwnStreamsConcurrently) {
    constexpr int kThreads = 4;
    constexpr int kRounds = 25;
    constexpr std::size_t n = 16 * 1024;
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            const keel_plugin_api& a = api();
            for (int round = 0; round < kRounds; ++round) {
                // Created, used and destroyed here: exercises the pools too.
                keel_stream stream = nullptr;
                keel_event event = nullptr;
                keel_device_addr buf = 0;
                std::vector<float> host(n, 0.0f);
                const float value = static_cast<float>(t * 1000 + round);
                bool good = succeeded(a.stream_create(device(), 0, &stream)) && succeeded(a.event_create(device(), 0, &event)) &&
                            succeeded(a.device_alloc(device(), n * sizeof(float), &buf));
                if (good) {
                    const LaunchArgs l({buffer_arg(buf, n * sizeof(float)), f32_arg(value)});
                    keel_kernel fill = nullptr;
                    good = succeeded(a.kernel_get(device(), "fill", &fill)) && succeeded(a.kernel_launch(stream, fill, l.get())) &&
                           succeeded(a.event_record(event, stream)) &&
                           succeeded(a.memcpy_d2h(stream, host.data(), buf, n * sizeof(float))) &&
                           succeeded(a.event_synchronize(event)) && succeeded(a.stream_synchronize(stream));
                }
                for (float v : host)
                    if (v != value) good = false;
                if (buf != 0 && !succeeded(a.device_free(device(), buf))) good = false;
                if (event != nullptr && !succeeded(a.event_destroy(event))) good = false;
                if (stream != nullptr && !succeeded(a.stream_destroy(stream))) good = false;
                if (!good) failures.fetch_add(1);
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
}

TEST_F(CudaThreads, OneStreamAcceptsWorkFromSeveralThreads) {
    constexpr int kThreads = 4;
    constexpr int kPerThread = 200;
    Stream stream(api(), device());
    DeviceBuffer buf(api(), device(), kThreads * sizeof(float));
    KEEL_ASSERT_OK(api().memset_d8(stream.get(), buf.addr(), 0, buf.size()));
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            // Each thread fills its own element; the last fill wins.
            for (int i = 1; i <= kPerThread; ++i) {
                const LaunchArgs l({buffer_arg(buf.addr() + t * sizeof(float), sizeof(float)), f32_arg(float(i))});
                keel_kernel fill = nullptr;
                if (!succeeded(api().kernel_get(device(), "fill", &fill)) || !succeeded(api().kernel_launch(stream.get(), fill, l.get())))
                    failures.fetch_add(1);
            }
        });
    }
    for (auto& th : threads) th.join();
    std::vector<float> host(kThreads, 0.0f);
    KEEL_ASSERT_OK(api().memcpy_d2h(stream.get(), host.data(), buf.addr(), buf.size()));
    KEEL_ASSERT_OK(api().stream_synchronize(stream.get()));
    EXPECT_EQ(failures.load(), 0);
    for (float v : host) EXPECT_EQ(v, float(kPerThread));
}

}  // namespace
}  // namespace keel::cuda_test
