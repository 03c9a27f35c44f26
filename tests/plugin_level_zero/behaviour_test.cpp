// What is particular to the Level Zero plugin, checked on the fake driver:
// staged copies of pageable memory, recycling of events, appends and kernel
// arguments never used from two threads at once (the fake driver aborts if
// they are), and a clean release of every Level Zero object.
#include "fake_fixture.hpp"

#include <atomic>
#include <chrono>
#include <future>
#include <numeric>
#include <thread>
#include <vector>

#include <unistd.h>

namespace keel::level_zero_test {
namespace {

// The arguments of fill(out, value) over `bytes` of `buf`.
std::vector<keel_kernel_arg> fill_args(keel_device_addr buf, std::uint64_t bytes, float value) {
    return {buffer_arg(buf, bytes), f32_arg(value)};
}

TEST_F(OnFakeDriver, NoEnqueueEntryWaitsForTheDevice) {
    // keel.h: the enqueueing entries return without waiting for any work.
    // Both streams are held by host functions; every enqueue entry is
    // called behind them, on another thread, which must finish while the
    // gates are still closed.
    const keel_stream s = new_stream();
    const keel_stream other = new_stream();
    constexpr std::uint64_t kBytes = 64 * sizeof(float);
    const keel_device_addr a = new_buffer(kBytes), b = new_buffer(kBytes);
    void* pinned = nullptr;
    KEEL_ASSERT_OK(api().host_alloc(device(), kBytes, &pinned));
    keel_event plain = nullptr, timing = nullptr;
    KEEL_ASSERT_OK(api().event_create(device(), 0, &plain));
    KEEL_ASSERT_OK(api().event_create(device(), KEEL_EVENT_TIMING, &timing));
    keel_kernel fill = nullptr;
    KEEL_ASSERT_OK(api().kernel_get(device(), "fill", &fill));
    const LaunchArgs launch(fill_args(a, kBytes, 3.0f));
    std::vector<float> pageable(64, 1.0f), back(64, 0.0f);
    StatusLog ran;
    Gate gate, other_gate;
    KEEL_ASSERT_OK(gate.hold(api(), s));
    KEEL_ASSERT_OK(other_gate.hold(api(), other));
    KEEL_ASSERT_OK(api().event_record(plain, other));  // pending behind other_gate

    std::promise<int> finished;
    std::thread caller([&] {
        int failures = 0;
        const auto call = [&](keel_error* e) { failures += take(e) ? 1 : 0; };
        call(api().stream_wait_event(s, plain));
        call(api().memcpy_h2d(s, a, pageable.data(), kBytes));
        call(api().memcpy_h2d(s, b, pinned, kBytes));
        call(api().memcpy_d2d(s, b, a, kBytes));
        call(api().memset_d8(s, b, 0, kBytes));
        call(api().kernel_launch(s, fill, launch.get()));
        const std::uint8_t inline_bytes[8] = {};
        call(api().memcpy_h2d_inline(s, b, inline_bytes, sizeof inline_bytes));
        call(api().event_record(timing, s));
        call(api().stream_enqueue_host_func(s, &StatusLog::record, &ran));
        call(api().memcpy_d2h(s, back.data(), a, kBytes));
        finished.set_value(failures);
    });
    std::future<int> done = finished.get_future();
    const bool returned = done.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
    EXPECT_TRUE(returned) << "an enqueue entry waited for the held streams";
    if (returned) {
        EXPECT_EQ(done.get(), 0);
    }
    EXPECT_TRUE(ran.get().empty());
    EXPECT_EQ(back, std::vector<float>(64, 0.0f)) << "the copy back ran before its stream got there";
    gate.open();
    other_gate.open();
    caller.join();
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    EXPECT_EQ(back, std::vector<float>(64, 3.0f));
    EXPECT_EQ(ran.get(), std::vector<keel_status>{KEEL_STATUS_OK});
    KEEL_EXPECT_OK(api().event_destroy(plain));
    KEEL_EXPECT_OK(api().event_destroy(timing));
    KEEL_EXPECT_OK(api().host_free(device(), pinned));
    KEEL_EXPECT_OK(api().stream_destroy(s));
    KEEL_EXPECT_OK(api().stream_destroy(other));
    KEEL_EXPECT_OK(api().device_free(device(), a));
    KEEL_EXPECT_OK(api().device_free(device(), b));
}

TEST_F(OnFakeDriver, AnInterprocessEventIsNeverATimingEvent) {
    ASSERT_NE(api().ipc_event_export, nullptr) << "the fake driver shares event pools";
    keel_event e = nullptr;
    const CError both = outcome(api().event_create(device(), KEEL_EVENT_INTERPROCESS | KEEL_EVENT_TIMING, &e));
    EXPECT_EQ(both.code, KEEL_STATUS_INVALID_ARGUMENT) << both.message;
    EXPECT_TRUE(contains(both.message, "KEEL_EVENT_TIMING")) << both.message;
    KEEL_ASSERT_OK(api().event_create(device(), KEEL_EVENT_INTERPROCESS, &e));
    float ms = 0;
    EXPECT_EQ(outcome(api().event_elapsed_time(e, e, &ms)).code, KEEL_STATUS_FAILED_PRECONDITION);
    // Imported in this process (the fake driver allows it): waited for, never recorded or timed.
    keel_ipc_handle h{};
    h.struct_size = KEEL_IPC_HANDLE_STRUCT_SIZE;
    KEEL_ASSERT_OK(api().ipc_event_export(e, &h));
    keel_event seen = nullptr;
    KEEL_ASSERT_OK(api().ipc_event_import(device(), &h, &seen));
    ::close(h.fd);
    const keel_stream s = new_stream();
    EXPECT_EQ(outcome(api().event_record(seen, s)).code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(outcome(api().event_elapsed_time(seen, seen, &ms)).code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(outcome(api().event_elapsed_time(e, seen, &ms)).code, KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_OK(api().stream_wait_event(s, seen));
    KEEL_EXPECT_OK(api().stream_synchronize(s));
    KEEL_EXPECT_OK(api().stream_destroy(s));
    KEEL_EXPECT_OK(api().event_destroy(seen));
    KEEL_EXPECT_OK(api().event_destroy(e));
}

TEST_F(OnFakeDriver, MemoryTheDriverSplitOverSeveralObjectsIsRefusedAtExport) {
    // One descriptor would share only the first object: refused, never half shared.
    keel_device_addr a = 0;
    KEEL_ASSERT_OK(api().ipc_memory_alloc(device(), 4096, &a));
    keel_ipc_handle h{};
    h.struct_size = KEEL_IPC_HANDLE_STRUCT_SIZE;
    fake_ze_split_ipc_memory(2);
    const CError split = outcome(api().ipc_memory_export(device(), a, &h));
    fake_ze_split_ipc_memory(1);
    EXPECT_EQ(split.code, KEEL_STATUS_UNIMPLEMENTED) << split.message;
    EXPECT_TRUE(contains(split.message, "2 memory objects")) << split.message;
    KEEL_ASSERT_OK(api().ipc_memory_export(device(), a, &h));
    ::close(h.fd);
    KEEL_EXPECT_OK(api().device_free(device(), a));
}

TEST_F(OnFakeDriver, ANullDeviceAddressIsRefusedAsSuch) {
    // Not in the driver's words ("zeMemGetAllocProperties: null pointer").
    const keel_stream s = new_stream();
    std::vector<std::uint8_t> host(64);
    for (const CError& e : {outcome(api().memcpy_h2d(s, 0, host.data(), 64)),
                            outcome(api().memcpy_d2h(s, host.data(), 0, 64)),
                            outcome(api().memset_d8(s, 0, 1, 64)),
                            outcome(api().device_free(device(), 0))}) {
        EXPECT_EQ(e.code, KEEL_STATUS_INVALID_ARGUMENT) << e.message;
        EXPECT_TRUE(contains(e.message, "null device address")) << e.message;
    }
    KEEL_EXPECT_OK(api().stream_synchronize(s));
    KEEL_EXPECT_OK(api().stream_destroy(s));
}

TEST_F(OnFakeDriver, PageableMemoryIsReadAndWrittenWhenTheCopyRunsInChunks) {
    // 9 MiB + 3: three chunks through one 4 MiB staging buffer.
    const std::size_t n = (9u << 20) + 3;
    const keel_stream s = new_stream();
    const keel_device_addr buf = new_buffer(n);
    std::vector<std::uint8_t> source(n, 1), back(n, 0);
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(api(), s));
    KEEL_ASSERT_OK(api().memcpy_h2d(s, buf, source.data(), n));
    KEEL_ASSERT_OK(api().memcpy_d2h(s, back.data(), buf, n));
    // Changed after the enqueue, before the stream got there: the copy must
    // read this, and must not have written `back` yet.
    std::iota(source.begin(), source.end(), std::uint8_t{7});
    EXPECT_EQ(back, std::vector<std::uint8_t>(n, 0));
    gate.open();
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    EXPECT_EQ(back, source);
    KEEL_EXPECT_OK(api().stream_destroy(s));
    KEEL_EXPECT_OK(api().device_free(device(), buf));
}

TEST_F(OnFakeDriver, PinnedMemoryIsCopiedDirectlyAndAPinnedRangeRunningPastItIsStaged) {
    const keel_stream s = new_stream();
    const keel_device_addr buf = new_buffer(4096);
    void* pinned = nullptr;
    KEEL_ASSERT_OK(api().host_alloc(device(), 4096, &pinned));
    std::fill_n(static_cast<std::uint8_t*>(pinned), 4096, std::uint8_t{3});
    KEEL_ASSERT_OK(api().memcpy_h2d(s, buf, pinned, 4096));
    std::vector<std::uint8_t> back(4096, 0);
    KEEL_ASSERT_OK(api().memcpy_d2h(s, back.data(), buf, 4096));
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    EXPECT_EQ(back, std::vector<std::uint8_t>(4096, 3));
    // host_free refuses what host_alloc did not return.
    KEEL_EXPECT_ERROR(api().host_free(device(), static_cast<std::uint8_t*>(pinned) + 8), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(api().host_free(device(), back.data()), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_OK(api().host_free(device(), pinned));
    // device_free refuses an address inside an allocation.
    const CError inside = outcome(api().device_free(device(), buf + 16));
    EXPECT_EQ(inside.code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(inside.message.find("not its start"), std::string::npos) << inside.message;
    KEEL_EXPECT_OK(api().stream_destroy(s));
    KEEL_EXPECT_OK(api().device_free(device(), buf));
}

TEST_F(OnFakeDriver, EventsAreRecycledWhenNothingWaitsForThemAnyMore) {
    const keel_stream a = new_stream();
    const keel_stream b = new_stream();
    const keel_device_addr buf = new_buffer(64);
    keel_event e = nullptr;
    KEEL_ASSERT_OK(api().event_create(device(), 0, &e));
    const std::uint64_t live_before = fake_ze_live_objects();
    // Each round: work on a, a record, a wait on b, work on b. Thousands of
    // Level Zero events pass through; with at most 200 operations in flight
    // the pool must not grow with them.
    for (int round = 0; round < 3000; ++round) {
        KEEL_ASSERT_OK(api().memset_d8(a, buf, static_cast<std::uint8_t>(round), 32));
        KEEL_ASSERT_OK(api().event_record(e, a));
        KEEL_ASSERT_OK(api().stream_wait_event(b, e));
        KEEL_ASSERT_OK(api().memset_d8(b, buf + 32, static_cast<std::uint8_t>(round), 32));
        if (round % 50 == 49) {
            KEEL_ASSERT_OK(api().stream_synchronize(b));
        }
    }
    KEEL_ASSERT_OK(api().stream_synchronize(a));
    KEEL_ASSERT_OK(api().stream_synchronize(b));
    // At most two pools: each is the pool and its 256 events.
    EXPECT_LE(fake_ze_live_objects() - live_before, 2u * 257u);
    KEEL_EXPECT_OK(api().event_destroy(e));
    KEEL_EXPECT_OK(api().stream_destroy(a));
    KEEL_EXPECT_OK(api().stream_destroy(b));
    KEEL_EXPECT_OK(api().device_free(device(), buf));
}

TEST_F(OnFakeDriver, ThreadsFeedingOneStreamNeverUseItsCommandListAtOnce) {
    constexpr int kThreads = 4, kRounds = 300;
    const keel_stream s = new_stream();
    const keel_device_addr buf = new_buffer(kThreads * 64);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            std::vector<std::uint8_t> out(64);
            for (int r = 0; r < kRounds; ++r) {
                const keel_device_addr mine = buf + static_cast<keel_device_addr>(t) * 64;
                if (take(api().memset_d8(s, mine, static_cast<std::uint8_t>(r), 64))) ++failures;
                if (take(api().memcpy_d2h(s, out.data(), mine, 64))) ++failures;
                if (r % 50 == 0 && take(api().stream_synchronize(s))) ++failures;
            }
            if (take(api().stream_synchronize(s))) ++failures;  // before `out` goes
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
    KEEL_EXPECT_OK(api().stream_destroy(s));
    KEEL_EXPECT_OK(api().device_free(device(), buf));
}

TEST_F(OnFakeDriver, StreamsOnSeveralThreadsLaunchTheSameKernelWithTheirOwnArguments) {
    constexpr int kThreads = 3, kRounds = 100;
    constexpr std::uint64_t kBytes = 256 * sizeof(float);
    keel_kernel fill = nullptr;
    KEEL_ASSERT_OK(api().kernel_get(device(), "fill", &fill));
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            keel_stream s = nullptr;
            keel_device_addr buf = 0;
            if (take(api().stream_create(device(), 0, &s)) || take(api().device_alloc(device(), kBytes, &buf))) {
                ++failures;
                return;
            }
            std::vector<float> out(256);
            for (int r = 0; r < kRounds; ++r) {
                const float value = static_cast<float>(t * 1000 + r);
                const LaunchArgs launch(fill_args(buf, kBytes, value));
                if (take(api().kernel_launch(s, fill, launch.get())) ||
                    take(api().memcpy_d2h(s, out.data(), buf, kBytes)) || take(api().stream_synchronize(s)) ||
                    out != std::vector<float>(256, value))
                    ++failures;
            }
            if (take(api().stream_destroy(s)) || take(api().device_free(device(), buf))) ++failures;
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
}

TEST_F(OnFakeDriver, TimingEventsReadKernelTimestampsAcrossACounterWrap) {
    // The 32-bit kernel timestamp counter wraps between the two records.
    constexpr auto kHeld = std::chrono::milliseconds(600);
    fake_ze_wrap_kernel_timestamps_in(300'000'000);
    const keel_stream s = new_stream();
    keel_event start = nullptr, end = nullptr;
    KEEL_ASSERT_OK(api().event_create(device(), KEEL_EVENT_TIMING, &start));
    KEEL_ASSERT_OK(api().event_create(device(), KEEL_EVENT_TIMING, &end));
    Gate gate;
    KEEL_ASSERT_OK(api().event_record(start, s));
    KEEL_ASSERT_OK(api().event_synchronize(start));  // stamped before the hold begins
    KEEL_ASSERT_OK(gate.hold(api(), s));
    KEEL_ASSERT_OK(api().event_record(end, s));
    std::this_thread::sleep_for(kHeld);
    gate.open();
    KEEL_ASSERT_OK(api().event_synchronize(end));
    float ms = -1;
    KEEL_ASSERT_OK(api().event_elapsed_time(start, end, &ms));
    EXPECT_GE(ms, static_cast<float>(kHeld.count()) - 1.0f) << "the end marker ran after the gate opened";
    EXPECT_LT(ms, 60'000.0f);
    KEEL_EXPECT_OK(api().event_destroy(start));
    KEEL_EXPECT_OK(api().event_destroy(end));
    KEEL_EXPECT_OK(api().stream_destroy(s));
}

TEST_F(OnFakeDriver, ShutdownLeavesNoLevelZeroObjectBehind) {
    const keel_stream s = new_stream();
    const keel_device_addr buf = new_buffer(1024 * sizeof(float));
    keel_event start = nullptr, end = nullptr;
    KEEL_ASSERT_OK(api().event_create(device(), KEEL_EVENT_TIMING, &start));
    KEEL_ASSERT_OK(api().event_create(device(), KEEL_EVENT_TIMING, &end));
    keel_kernel fill = nullptr;
    KEEL_ASSERT_OK(api().kernel_get(device(), "fill", &fill));
    const LaunchArgs launch(fill_args(buf, 1024 * sizeof(float), 1.5f));
    StatusLog statuses;
    KEEL_ASSERT_OK(api().event_record(start, s));
    KEEL_ASSERT_OK(api().kernel_launch(s, fill, launch.get()));
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(s, &StatusLog::record, &statuses));
    const std::uint8_t bytes[16] = {1, 2, 3};
    KEEL_ASSERT_OK(api().memcpy_h2d_inline(s, buf, bytes, sizeof bytes));
    KEEL_ASSERT_OK(api().event_record(end, s));
    KEEL_ASSERT_OK(api().event_synchronize(end));
    float ms = -1;
    KEEL_ASSERT_OK(api().event_elapsed_time(start, end, &ms));
    EXPECT_GE(ms, 0.0f);
    EXPECT_EQ(statuses.get(), std::vector<keel_status>{KEEL_STATUS_OK});
    KEEL_EXPECT_OK(api().event_destroy(start));
    KEEL_EXPECT_OK(api().event_destroy(end));
    KEEL_EXPECT_OK(api().stream_destroy(s));
    KEEL_EXPECT_OK(api().device_free(device(), buf));
    EXPECT_GT(fake_ze_live_objects(), 0u) << "pools, modules and the context live until shutdown";
    plugin().shutdown();
    EXPECT_EQ(fake_ze_live_objects(), 0u);
}

}  // namespace
}  // namespace keel::level_zero_test
