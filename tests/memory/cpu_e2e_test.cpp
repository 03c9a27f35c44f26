// The memory machinery end to end on the CPU plugin with its checker on
// (guarded and poisoned memory, host-source fingerprints, late frees
// refused) and random delays, so device work really runs after the host
// moved on. Streams are held back deterministically with a Gate (a host
// function that waits until the test opens it) where a test needs work to
// be unfinished. Everything goes through the public API.
#include "device_fixture.hpp"

#include <keel/keel.hpp>
#include <keel/testing/gate.hpp>
#include <keel/testing/result.hpp>
#include <keel/testing/scoped_env.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <span>
#include <thread>
#include <vector>

namespace keel {
namespace {

using testing::Gate;

// One Runtime for the whole run, created after the checker is switched on
// (the CPU plugin reads its settings once, when it is loaded).
const Runtime& runtime() {
    static Runtime rt = testing::checked_cpu_runtime();
    return rt;
}

class CpuMemory : public ::testing::Test {
protected:
    void SetUp() override {
        auto d = runtime().device("cpu:0");
        if (!d.ok()) GTEST_SKIP() << "no cpu:0: " << d.error().message();
        device_ = std::make_unique<Device>(*d);
    }
    const Device& device() const { return *device_; }
    // A stream that uses `memory` (a private instance of the test).
    static Stream stream(const MemoryPool& memory) { return Stream::create(memory).expect("Stream::create"); }
    // A stream that uses the device's shared instance.
    Stream stream() const { return Stream::create(device()).expect("Stream::create"); }
    static MemoryConfig config() {
        MemoryConfig c;
        c.reclaim_interval = std::chrono::microseconds{500};
        return c;
    }
    // The bytes of `view`, read on `s`.
    static Result<std::vector<std::uint8_t>> read(const Stream& s, DeviceView view) {
        KEEL_TRY_ASSIGN(HostFuture<std::uint8_t> future, s.copy_to_vector<std::uint8_t>(view));
        return std::move(future).get();
    }
    std::unique_ptr<Device> device_;
};

std::vector<std::uint8_t> pattern(std::size_t n, std::uint32_t seed) {
    std::vector<std::uint8_t> v(n);
    std::mt19937 rng(seed);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    return v;
}

TEST_F(CpuMemory, RecordStreamKeepsABlockFromReuseWhileAnotherStreamReadsIt) {
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), config()));
    Stream s1 = stream(memory), s2 = stream(memory);
    Gate gate;
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer a, Buffer::allocate(s1, 4 * MiB));
    KEEL_ASSERT_OK(s1.memset(a, 0x11));
    KEEL_ASSERT_OK(s2.order_after(s1));
    KEEL_ASSERT_OK(gate.hold(s2));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s2, 4 * MiB));
    KEEL_ASSERT_OK(s2.copy(b, a));  // unfinished: s2 is gated
    KEEL_ASSERT_OK(a.record_stream(s2));
    const keel_device_addr a_addr = a.address();
    a.reset();
    // No late free either: the pending segment is not released.
    KEEL_ASSERT_OK(memory.release_cached());
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer c, Buffer::allocate(s1, 4 * MiB));
    EXPECT_NE(c.address(), a_addr);
    KEEL_ASSERT_OK(s1.memset(c, 0x22));
    KEEL_ASSERT_OK(s1.synchronize());
    gate.open();
    KEEL_ASSERT_OK(s2.synchronize());
    KEEL_ASSERT_OK_AND_ASSIGN(auto got, s2.copy_to_vector<std::uint8_t>(b));
    KEEL_ASSERT_OK_AND_ASSIGN(auto bytes, std::move(got).get());
    EXPECT_EQ(bytes, std::vector<std::uint8_t>(4 * MiB, 0x11));
    memory.synchronize();
    EXPECT_EQ(memory.stats().pending_free_count, 0u);
}

TEST_F(CpuMemory, WithoutRecordStreamTheCheckerCatchesTheEarlyReuse) {
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), config()));
    Stream s1 = stream(memory), s2 = stream(memory);
    Gate gate;
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer a, Buffer::allocate(s1, 4 * MiB));
    KEEL_ASSERT_OK(s1.memset(a, 0x11));
    KEEL_ASSERT_OK(s2.order_after(s1));
    KEEL_ASSERT_OK(gate.hold(s2));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s2, 4 * MiB));
    KEEL_ASSERT_OK(s2.copy(b, a));
    const keel_device_addr a_addr = a.address();
    a.reset();  // the bug: s2 still reads it, nobody said so
    // s1 gets the block back at once (no plugin call, so no late free to
    // see); its first write is not ordered after s2's read, whatever the
    // timing: the checker refuses it and fails both streams.
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer c, Buffer::allocate(s1, 4 * MiB));
    EXPECT_EQ(c.address(), a_addr);
    const Result<void> reuse = s1.memset(c, 0x22);
    ASSERT_FALSE(reuse.ok());
    EXPECT_NE(reuse.error().message().find("race"), std::string::npos) << reuse.error().message();
    gate.open();
    EXPECT_FALSE(s2.synchronize().ok());
    EXPECT_FALSE(s1.synchronize().ok());
}

TEST_F(CpuMemory, AContainerDestroyedRightAfterAnAsyncCopyStillArrives) {
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), config()));
    Stream s = stream(memory);
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(s));  // every copy runs after its container died
    const std::vector<std::size_t> sizes = {8, 1000, 64 * KiB, 9 * MiB + 123};
    std::vector<Buffer> buffers;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, sizes[i]));
        auto data = std::make_unique<std::vector<std::uint8_t>>(pattern(sizes[i], 100 + i));
        KEEL_ASSERT_OK(s.copy(b, *data));
        std::fill(data->begin(), data->end(), 0);  // reused...
        data.reset();                              // ...and destroyed
        buffers.push_back(std::move(b));
    }
    EXPECT_EQ(memory.staging_stats().inline_copies, 1u);
    gate.open();
    // The checker fingerprints every copy's host source at enqueue and
    // checks it at execution: staging must not have changed.
    KEEL_ASSERT_OK(s.synchronize());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        KEEL_ASSERT_OK_AND_ASSIGN(auto got, s.copy_to_vector<std::uint8_t>(buffers[i]));
        KEEL_ASSERT_OK_AND_ASSIGN(auto bytes, std::move(got).get());
        EXPECT_EQ(bytes, pattern(sizes[i], 100 + i)) << "size " << sizes[i];
    }
}

TEST_F(CpuMemory, ALargeCopyCyclesThroughItsStagingRingAndArrivesIntact) {
    MemoryConfig cfg = config();
    cfg.staging.copy_threads = 2;  // two chunks staged ahead, whatever the machine
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), cfg));
    Stream s = stream(memory);
    const std::size_t size = 9 * MiB + 123;  // 10 chunks, the last one short
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, size));
    const auto data = pattern(size, 31);
    // The stream is idle: the ring waits for the device (with the checker's
    // random delays) and each reused block is refilled only after its copy
    // ran, which the checker's source fingerprints would catch otherwise.
    KEEL_ASSERT_OK(s.copy(b, data));
    const StagingStats st = memory.staging_stats();
    // ring_chunks (4) blocks in flight plus one being filled ahead.
    EXPECT_EQ(st.ring_reuses, 5u);
    EXPECT_EQ(st.ring_give_ups, 0u);
    EXPECT_EQ(st.host_allocations, 5u);
    EXPECT_EQ(st.host_copy_threads, 2u);
    EXPECT_EQ(st.parallel_copies, 9u);  // the nine full 1 MiB chunks
    KEEL_ASSERT_OK_AND_ASSIGN(auto got, s.copy_to_vector<std::uint8_t>(b));
    KEEL_ASSERT_OK_AND_ASSIGN(auto bytes, std::move(got).get());
    EXPECT_EQ(bytes, data);
}

// Every path of the staging engine with one copy thread and with several,
// under the checker (it fingerprints each copy's source at enqueue and
// checks it when the copy runs, with random delays): sources destroyed right
// after return; then downloads, which are not staged, into the caller's
// buffer and into a new vector.
TEST_F(CpuMemory, ParallelStagingDeliversEveryPathWithOneAndManyThreads) {
    for (std::uint32_t threads : {1u, 4u}) {
        MemoryConfig cfg = config();
        cfg.staging.copy_threads = threads;
        KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), cfg));
        Stream s = stream(memory);
        const std::size_t size = 6 * MiB + 4321;
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, size));
        {
            Gate gate;
            KEEL_ASSERT_OK(gate.hold(s));  // the device copies run after the source died
            auto data = std::make_unique<std::vector<std::uint8_t>>(pattern(size, 7 + threads));
            KEEL_ASSERT_OK(s.copy(b, *data));
            std::fill(data->begin(), data->end(), 0);
            data.reset();
            gate.open();
        }
        std::vector<std::uint8_t> out(size, 0);
        KEEL_ASSERT_OK_AND_ASSIGN(HostCopy copy, s.copy(out, b));
        KEEL_ASSERT_OK(copy.wait());
        EXPECT_EQ(out, pattern(size, 7 + threads)) << threads << " thread(s)";
        KEEL_ASSERT_OK_AND_ASSIGN(auto fresh, read(s, b));
        EXPECT_EQ(fresh, pattern(size, 7 + threads)) << threads << " thread(s)";
        const StagingStats st = memory.staging_stats();
        EXPECT_EQ(st.host_copy_threads, threads);
        if (threads > 1) EXPECT_EQ(st.parallel_copies, 6u);  // the upload's 6 full chunks
        else EXPECT_EQ(st.parallel_copies, 0u);
    }
}

// The staging settings of the environment apply to Stream::copy's staging as
// to the plugins' (one StagingConfig, read in one place), over the code's.
TEST_F(CpuMemory, TheStagingThreadsOfTheEnvironmentApplyToStreamCopy) {
    MemoryConfig cfg = config();
    cfg.staging.copy_threads = 1;
    cfg.staging.pageable.blocks_per_copy = 2;
    const testing::ScopedEnv threads("KEEL_PAGEABLE_THREADS", "3");
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), cfg));
    EXPECT_EQ(memory.config().staging.copy_threads, 3u);
    EXPECT_EQ(memory.config().staging.pageable.blocks_per_copy, 2u) << "unset variables change nothing";
    Stream s = stream(memory);
    const std::size_t size = 2 * MiB;
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, size));
    const std::vector<std::uint8_t> data = pattern(size, 5);
    KEEL_ASSERT_OK(s.copy(b, data));
    KEEL_ASSERT_OK_AND_ASSIGN(auto back, read(s, b));
    EXPECT_EQ(back, data);
    EXPECT_EQ(memory.staging_stats().host_copy_threads, 3u);
    {
        const testing::ScopedEnv bad("KEEL_PAGEABLE_THREADS", "three");
        auto refused = MemoryPool::create(device(), cfg);
        ASSERT_FALSE(refused.ok());
        EXPECT_EQ(refused.error().code(), KEEL_STATUS_INVALID_ARGUMENT);
        EXPECT_NE(refused.error().message().find("KEEL_PAGEABLE_THREADS"), std::string::npos)
            << refused.error().message();
    }
}

TEST_F(CpuMemory, ALargeCopyBehindBlockedWorkTakesFreshBlocksInsteadOfWaiting) {
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), config()));
    Stream s = stream(memory);
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(s));  // the stream cannot reach the copy
    const std::size_t size = 9 * MiB;
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, size));
    const auto data = pattern(size, 32);
    KEEL_ASSERT_OK(s.copy(b, data));  // returns: no deadlock
    const StagingStats st = memory.staging_stats();
    EXPECT_EQ(st.ring_give_ups, 1u);
    EXPECT_EQ(st.ring_reuses, 0u);
    EXPECT_EQ(st.host_allocations, 9u);
    gate.open();
    KEEL_ASSERT_OK_AND_ASSIGN(auto got, s.copy_to_vector<std::uint8_t>(b));
    KEEL_ASSERT_OK_AND_ASSIGN(auto bytes, std::move(got).get());
    EXPECT_EQ(bytes, data);
}

TEST_F(CpuMemory, AMovedInVectorIsCopiedWithoutStaging) {
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), config()));
    Stream s = stream(memory);
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(s));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, 5 * MiB));
    KEEL_ASSERT_OK(s.copy(b, pattern(5 * MiB, 77)));  // a temporary: moved in
    EXPECT_EQ(memory.staging_stats().host_allocations, 0u);
    gate.open();
    KEEL_ASSERT_OK_AND_ASSIGN(auto got, s.copy_to_vector<std::uint8_t>(b));
    KEEL_ASSERT_OK_AND_ASSIGN(auto bytes, std::move(got).get());
    EXPECT_EQ(bytes, pattern(5 * MiB, 77));
}

TEST_F(CpuMemory, TheCheckerSeesAPinnedSourceReusedBeforeItsCopyRan) {
    // The control for the tests above: the same thing without staging (a
    // direct copy from pinned memory, which the caller must leave alone
    // until the copy ran).
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), config()));
    Stream s = stream(memory);
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(s));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, 64 * KiB));
    KEEL_ASSERT_OK_AND_ASSIGN(PinnedBuffer data, PinnedBuffer::allocate(device(), 64 * KiB));
    const auto bytes = pattern(64 * KiB, 1);
    std::copy(bytes.begin(), bytes.end(), data.as<std::uint8_t>().begin());
    KEEL_ASSERT_OK(s.copy(b, data));
    std::fill(data.as<std::uint8_t>().begin(), data.as<std::uint8_t>().end(), 0);
    gate.open();
    auto synced = s.synchronize();
    ASSERT_FALSE(synced.ok());
    EXPECT_NE(synced.error().message().find("changed between enqueue and execution"), std::string::npos)
        << synced.error().message();
}

TEST_F(CpuMemory, TwoStreamPipelinePassesBuffersWithHoldsAndNoSyncs) {
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), config()));
    Stream producer = stream(memory), consumer = stream(memory);
    constexpr std::size_t kSteps = 48;
    constexpr std::size_t kChunk = 256 * KiB;
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer out, Buffer::allocate(consumer, kSteps * kChunk));
    for (std::size_t i = 0; i < kSteps; ++i) {
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(producer, kChunk));
        const auto data = pattern(kChunk, 7 * i);
        KEEL_ASSERT_OK(producer.copy(buf, data));
        KEEL_ASSERT_OK(consumer.order_after(producer));  // the "recv" waits for the data
        KEEL_ASSERT_OK_AND_ASSIGN(DeviceView slot, out.view(i * kChunk, kChunk));
        KEEL_ASSERT_OK(consumer.copy(slot, buf));             // the "send"
        // The producer lets go at once; the hold keeps the memory until the
        // send is done (no record_stream, no synchronisation).
        KEEL_ASSERT_OK(consumer.hold(std::move(buf)));
    }
    KEEL_ASSERT_OK_AND_ASSIGN(auto got, consumer.copy_to_vector<std::uint8_t>(out));
    KEEL_ASSERT_OK_AND_ASSIGN(auto bytes, std::move(got).get());
    for (std::size_t i = 0; i < kSteps; ++i)
        ASSERT_TRUE(std::equal(bytes.begin() + i * kChunk, bytes.begin() + (i + 1) * kChunk,
                               pattern(kChunk, 7 * i).begin()))
            << "step " << i;
    // The host never had to wait inside the loop.
    EXPECT_EQ(memory.tracker_stats().queue_waits, 0u);
    EXPECT_EQ(memory.staging_stats().in_flight_waits, 0u);
    EXPECT_EQ(memory.stats().pending_free_waits, 0u);
    memory.synchronize();
    EXPECT_EQ(memory.stats().allocated_count, 1u);  // only `out`
}

TEST_F(CpuMemory, TwoStreamPipelineKeepsSentBuffersAliveWithStreamHolds) {
    // As a framework would: streams of the device (its shared memory) and
    // Stream::hold.
    Stream producer = stream(), consumer = stream();
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, consumer.memory());
    constexpr std::size_t kSteps = 32;
    constexpr std::size_t kChunk = 128 * KiB;
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer out, Buffer::allocate(consumer, kSteps * kChunk));
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(consumer));  // every send runs after the producer moved on
    for (std::size_t i = 0; i < kSteps; ++i) {
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(producer, kChunk));
        KEEL_ASSERT_OK(producer.copy(buf, pattern(kChunk, 3 * i)));
        KEEL_ASSERT_OK(consumer.order_after(producer));
        KEEL_ASSERT_OK_AND_ASSIGN(DeviceView slot, out.view(i * kChunk, kChunk));
        KEEL_ASSERT_OK(consumer.copy(slot, buf));  // the "send"
        // Without the hold the block would go back to the producer's stream
        // at once and its next copy could overwrite it before the send ran:
        // the checker (late free refused, poison) would fail the stream.
        KEEL_ASSERT_OK(consumer.hold(std::move(buf)));
    }
    gate.open();
    KEEL_ASSERT_OK_AND_ASSIGN(auto got, consumer.copy_to_vector<std::uint8_t>(out));
    KEEL_ASSERT_OK_AND_ASSIGN(auto bytes, std::move(got).get());
    for (std::size_t i = 0; i < kSteps; ++i)
        ASSERT_TRUE(std::equal(bytes.begin() + i * kChunk, bytes.begin() + (i + 1) * kChunk,
                               pattern(kChunk, 3 * i).begin()))
            << "step " << i;
    memory.synchronize();
    EXPECT_EQ(memory.stats().allocated_count, 1u);  // only `out`: every hold released
}

TEST_F(CpuMemory, OutOfMemoryHeldByOtherStreamsIsRecoveredByTheRetry) {
    MemoryConfig cfg = config();
    cfg.allocator.reserved_limit = 64 * MiB;
    cfg.reclaim_interval = std::chrono::microseconds{0};
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), cfg));
    Stream s1 = stream(memory), s2 = stream(memory), s3 = stream(memory), user = stream(memory);
    Gate gate;
    {
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer cached, Buffer::allocate(s2, 24 * MiB));
    }  // cached on s2
    {
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer pending, Buffer::allocate(s3, 24 * MiB));
        KEEL_ASSERT_OK(gate.hold(user));
        KEEL_ASSERT_OK(user.memset(pending, 1));
        KEEL_ASSERT_OK(pending.record_stream(user));
    }  // pending on user's memset
    EXPECT_EQ(memory.stats().pending_free_count, 1u);
    EXPECT_EQ(memory.stats().reserved_bytes, 48 * MiB);
    gate.open();  // the ladder will wait for it
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer big, Buffer::allocate(s1, 40 * MiB));
    const AllocatorStats st = memory.stats();
    EXPECT_EQ(st.oom_retries, 1u);
    EXPECT_EQ(st.ooms, 0u);
    EXPECT_EQ(st.raw_frees, 2u);
    EXPECT_EQ(st.reserved_bytes, 40 * MiB);
    KEEL_ASSERT_OK(s1.memset(big, 3));
    KEEL_ASSERT_OK(s1.synchronize());
    KEEL_ASSERT_OK(user.synchronize());
}

TEST_F(CpuMemory, AnUnrecoverableOutOfMemoryReportsTheStatistics) {
    MemoryConfig cfg = config();
    cfg.allocator.reserved_limit = 64 * MiB;
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), cfg));
    Stream s = stream(memory);
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer held, Buffer::allocate(s, 40 * MiB));
    auto r = Buffer::allocate(s, 40 * MiB);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_OUT_OF_MEMORY);
    EXPECT_NE(r.error().message().find("allocated 40.0 MiB"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("1 OOM(s)"), std::string::npos) << r.error().message();
}

TEST_F(CpuMemory, MemoryStaysBoundedWhenTheHostEnqueuesFarAhead) {
    MemoryConfig cfg = config();
    cfg.staging.chunk_bytes = 1 * MiB;
    cfg.limits.max_staging_in_flight_bytes = 4 * MiB;
    cfg.limits.max_pending_free_bytes = 8 * MiB;
    cfg.limits.max_queued_per_stream = 32;
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), cfg));
    Stream s1 = stream(memory), s2 = stream(memory);
    Gate gate;
    // s2 stays held until the host has gone past a bound (so it must wait);
    // then it runs, and the host's wait ends.
    KEEL_ASSERT_OK(gate.hold(s2));
    // (A jthread: a failing assertion below stops and joins it, which opens
    // the gate before the streams go.)
    std::jthread opener([&](std::stop_token stop) {
        while (memory.stats().pending_free_bytes <= 8 * MiB && memory.tracker_stats().queue_waits == 0 &&
               !stop.stop_requested())
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        gate.open();
    });
    const auto host = pattern(1 * MiB, 5);
    constexpr int kSteps = 200;  // 200 MiB of buffers if nothing were bounded
    for (int i = 0; i < kSteps; ++i) {
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s1, 1 * MiB));
        KEEL_ASSERT_OK(s1.copy(buf, host));
        KEEL_ASSERT_OK(s2.order_after(s1));
        KEEL_ASSERT_OK(s2.memset(buf, static_cast<std::uint8_t>(i)));
        KEEL_ASSERT_OK(buf.record_stream(s2));
    }
    const AllocatorStats st = memory.stats();
    const StagingStats staging = memory.staging_stats();
    EXPECT_LE(staging.peak_in_flight_bytes, 4 * MiB);
    EXPECT_LE(st.peak_pending_free_bytes, 9 * MiB);
    EXPECT_LE(st.peak_reserved_bytes, 32 * MiB);
    EXPECT_LE(memory.tracker_stats().peak_outstanding, 2u * 32 + 8);
    // The device really was behind: the bounds made the host wait.
    EXPECT_GT(st.pending_free_waits + staging.in_flight_waits + memory.tracker_stats().queue_waits, 0u);
    opener.request_stop();
    opener.join();
    KEEL_ASSERT_OK(s2.synchronize());
}

TEST_F(CpuMemory, FenceOrdersAStreamWithoutBlockingTheHost) {
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), config()));
    Stream s1 = stream(memory), s2 = stream(memory);
    Gate gate;
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer x, Buffer::allocate(s1, 1 * MiB));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer y, Buffer::allocate(s2, 1 * MiB));
    KEEL_ASSERT_OK(gate.hold(s1));
    KEEL_ASSERT_OK(s1.memset(x, 0x33));
    KEEL_ASSERT_OK_AND_ASSIGN(Fence fence, s1.fence());
    KEEL_ASSERT_OK(s2.wait(fence));
    KEEL_ASSERT_OK(s2.copy(y, x));
    KEEL_ASSERT_OK(x.record_stream(s2));
    // The host got here while s1 is still held: nothing waited on the host.
    KEEL_ASSERT_OK_AND_ASSIGN(bool s1_done, s1.query());
    KEEL_ASSERT_OK_AND_ASSIGN(bool s2_done, s2.query());
    EXPECT_FALSE(s1_done);
    EXPECT_FALSE(s2_done);  // held behind the fence on the device
    gate.open();
    KEEL_ASSERT_OK_AND_ASSIGN(auto got, s2.copy_to_vector<std::uint8_t>(y));
    KEEL_ASSERT_OK_AND_ASSIGN(auto bytes, std::move(got).get());
    EXPECT_EQ(bytes, std::vector<std::uint8_t>(1 * MiB, 0x33));
}

TEST_F(CpuMemory, AnEventIsHostVisibleCompletion) {
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), config()));
    Stream s = stream(memory);
    Gate gate;
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer x, Buffer::allocate(s, 1 * MiB));
    KEEL_ASSERT_OK(gate.hold(s));
    KEEL_ASSERT_OK(s.memset(x, 1));
    KEEL_ASSERT_OK_AND_ASSIGN(Event done, Event::create(device()));
    KEEL_ASSERT_OK(done.record(s));
    KEEL_ASSERT_OK_AND_ASSIGN(bool early, done.query());
    EXPECT_FALSE(early);
    gate.open();
    KEEL_ASSERT_OK(done.synchronize());
    KEEL_ASSERT_OK_AND_ASSIGN(bool late, done.query());
    EXPECT_TRUE(late);
}

TEST_F(CpuMemory, AsyncErrorsSurfaceWhereTheHostObservesThem) {
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), config()));
    Stream s = stream(memory);
    Gate gate;
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer dst, Buffer::allocate(s, 4096));
    KEEL_ASSERT_OK_AND_ASSIGN(PinnedBuffer src, PinnedBuffer::allocate(device(), 4096));
    KEEL_ASSERT_OK(gate.hold(s));  // everything below is enqueued before anything fails
    KEEL_ASSERT_OK(s.copy(dst, src));
    KEEL_ASSERT_OK_AND_ASSIGN(auto future, s.copy_to_vector<std::uint8_t>(dst));
    std::vector<std::uint8_t> out(4096, 0x3c);
    KEEL_ASSERT_OK_AND_ASSIGN(HostCopy copy, s.copy(out, dst));
    std::vector<std::uint8_t> dropped(4096, 0);
    KEEL_ASSERT_OK_AND_ASSIGN(HostCopy unwaited, s.copy(dropped, dst));
    src.as<std::uint8_t>()[0] ^= 1;  // changed before its copy ran: found when the copy runs
    gate.open();
    auto got = std::move(future).get();
    ASSERT_FALSE(got.ok());
    // The stream's sticky error, reported by the wait that observes it.
    EXPECT_NE(got.error().message().find("HostCopy::wait"), std::string::npos) << got.error().message();
    EXPECT_NE(got.error().message().find("changed between enqueue and execution"), std::string::npos)
        << got.error().message();
    auto waited = copy.wait();
    ASSERT_FALSE(waited.ok());
    EXPECT_NE(waited.error().message().find("changed between enqueue and execution"), std::string::npos)
        << waited.error().message();
    EXPECT_TRUE(copy.wait().ok());  // reported once; the copy is over
    unwaited = HostCopy();  // dropping a failed copy returns (its error is only logged)
}

// Device -> host copies are not staged by the runtime: the plugin writes
// the caller's memory when the copy runs.
TEST_F(CpuMemory, ADeviceToHostCopyMakesNoPinnedAllocationAndDeliversEverySize) {
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), config()));
    Stream s = stream(memory);
    for (const std::size_t size : {std::size_t{1}, 4 * KiB + 3, 3 * MiB + 5}) {
        SCOPED_TRACE(size);
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, size));
        KEEL_ASSERT_OK(s.copy(b, pattern(size, 50)));  // moved in: not staged either
        const StagingStats before = memory.staging_stats();
        std::vector<std::uint8_t> out(size + 1, 0xee);
        KEEL_ASSERT_OK_AND_ASSIGN(HostCopy copy, s.copy(out, b));
        KEEL_ASSERT_OK(copy.wait());
        KEEL_ASSERT_OK_AND_ASSIGN(auto bytes, read(s, b));
        const StagingStats after = memory.staging_stats();
        EXPECT_EQ(std::vector<std::uint8_t>(out.begin(), out.end() - 1), pattern(size, 50));
        EXPECT_EQ(out.back(), 0xee);
        EXPECT_EQ(bytes, pattern(size, 50));
        EXPECT_EQ(after.host_allocations, before.host_allocations);
        EXPECT_EQ(after.reuses, before.reuses);
        EXPECT_EQ(after.in_flight_bytes, 0u);
    }
}

// A future owns its vector: dropping it never blocks, and the vector goes
// once the copy ran.
TEST_F(CpuMemory, DroppingAHostFutureBehindAHeldStreamReturnsAtOnceAndFreesTheVectorLater) {
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), config()));
    Stream s = stream(memory);
    const std::size_t size = 4 * MiB;
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, size));
    KEEL_ASSERT_OK(s.memset(b, 0x5a));
    KEEL_ASSERT_OK(s.synchronize());
    memory.sweep();
    const TrackerStats before = memory.tracker_stats();
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(s));
    {
        KEEL_ASSERT_OK_AND_ASSIGN(auto future, s.copy_to_vector<std::uint8_t>(b));
    }  // returns although the stream is held (a wait would hang on the gate)
    EXPECT_FALSE(gate.timed_out());
    memory.sweep();
    EXPECT_EQ(memory.tracker_stats().outstanding, before.outstanding + 1);  // the vector, held
    gate.open();
    KEEL_ASSERT_OK(s.synchronize());
    // The reclaimer thread may be releasing it right now (a sweep settles
    // for a bounded time only): wait for the release, not for one sweep.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    memory.sweep();
    while (memory.tracker_stats().outstanding != before.outstanding && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        memory.sweep();
    }
    const TrackerStats after = memory.tracker_stats();
    EXPECT_EQ(after.outstanding, before.outstanding);
    EXPECT_GE(after.swept, before.swept + 1);
}

// A use after free of plugin memory is refused by the call that commits it.
TEST_F(CpuMemory, AUseAfterFreeIsRefusedByTheCall) {
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), config()));
    Stream s = stream(memory);
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer dst, Buffer::allocate(s, 4096));
    KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer raw, RawBuffer::allocate(device(), 4096));
    const DeviceView stale = raw.view();
    KEEL_ASSERT_OK(raw.free());
    const Result<void> r = s.copy(dst, stale);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("use after free"), std::string::npos) << r.error().message();
}

TEST_F(CpuMemory, ManyThreadsAllocateFreeAndCopyConcurrently) {
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), config()));
    constexpr int kThreads = 4;
    constexpr int kSteps = 60;
    Stream side = stream(memory);
    std::vector<Stream> own;
    for (int t = 0; t < kThreads; ++t) own.push_back(stream(memory));
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            std::mt19937 rng(1234 + t);
            const Stream& s = own[t];
            for (int i = 0; i < kSteps; ++i) {
                const std::size_t n = 1 + rng() % (2 * MiB);
                const std::uint32_t seed = rng();
                auto buf = Buffer::allocate(s, n);
                if (!buf.ok()) { ++failures; continue; }
                std::vector<std::uint8_t> data = pattern(n, seed);
                // Staged from a container the thread keeps, or moved in.
                const bool staged = rng() % 2 == 0;
                if (!(staged ? s.copy(*buf, data)
                             : s.copy(*buf, std::move(data)))
                         .ok())
                    ++failures;
                switch (rng() % 3) {
                    case 0: {  // read on the shared side stream, then free with a record
                        auto copy = Buffer::allocate(side, n);
                        if (!copy.ok() || !side.order_after(s).ok() ||
                            !side.copy(*copy, *buf).ok() || !buf->record_stream(side).ok()) {
                            ++failures;
                            break;
                        }
                        buf->reset();
                        auto back = side.copy_to_vector<std::uint8_t>(*copy);
                        if (!back.ok()) { ++failures; break; }
                        auto bytes = std::move(*back).get();
                        if (!bytes.ok() || *bytes != pattern(n, seed)) ++failures;
                        break;
                    }
                    case 1: {  // hand it to a hold on the side stream
                        if (!side.order_after(s).ok() ||
                            !side.hold(std::move(*buf)).ok())
                            ++failures;
                        break;
                    }
                    default: {  // read back on its own stream
                        auto back = s.copy_to_vector<std::uint8_t>(*buf);
                        if (!back.ok()) { ++failures; break; }
                        auto bytes = std::move(*back).get();
                        if (!bytes.ok() || *bytes != pattern(n, seed)) ++failures;
                    }
                }
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
    KEEL_ASSERT_OK(side.synchronize());
    for (const Stream& s : own) KEEL_ASSERT_OK(s.synchronize());
    memory.synchronize();
    const AllocatorStats st = memory.stats();
    EXPECT_EQ(st.allocated_count, 0u);
    EXPECT_EQ(st.pending_free_count, 0u);
    EXPECT_EQ(memory.staging_stats().in_flight_bytes, 0u);
}

TEST_F(CpuMemory, TheSharedInstanceIsOnePerDeviceAndStreamsOfTheDeviceUseIt) {
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool a, MemoryPool::shared(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool b, MemoryPool::shared(device()));
    EXPECT_TRUE(a == b);
    Stream s = stream();
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool used, s.memory());
    EXPECT_TRUE(used == a);
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool own, MemoryPool::create(device()));
    EXPECT_FALSE(own == a);
    Stream p = stream(own);
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool used_by_p, p.memory());
    EXPECT_TRUE(used_by_p == own);
    // Buffers, staged copies and holds of `p` go through `own`.
    const std::uint64_t before = own.stats().allocations;
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(p, 4096));
    const auto data = pattern(4096, 2);
    KEEL_ASSERT_OK(p.copy(buf, data));  // staged (an lvalue)
    KEEL_ASSERT_OK(p.hold(std::move(buf)));
    EXPECT_EQ(own.stats().allocations, before + 1);
    EXPECT_GT(own.staging_stats().host_allocations, 0u);
    KEEL_ASSERT_OK(p.synchronize());
}

TEST_F(CpuMemory, AnExplicitConfigurationIsNeverSilentlyIgnored) {
    MemoryConfig small = config();
    small.allocator.reserved_limit = 32 * MiB;
    MemoryConfig other = small;
    other.allocator.reserved_limit = 16 * MiB;
    {
        KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool shared, MemoryPool::shared(device(), small));
        EXPECT_EQ(shared.config().allocator.reserved_limit, 32 * MiB);
        KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool same, MemoryPool::shared(device(), small));
        EXPECT_TRUE(same == shared) << "the same configuration again is fine";
        auto conflict = MemoryPool::shared(device(), other);
        ASSERT_FALSE(conflict.ok());
        EXPECT_EQ(conflict.error().code(), KEEL_STATUS_FAILED_PRECONDITION);
        EXPECT_NE(conflict.error().message().find("another configuration"), std::string::npos)
            << conflict.error().message();
        Stream s = stream();
        KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool used, s.memory());
        EXPECT_EQ(used.config().allocator.reserved_limit, 32 * MiB);
    }
    {
        // Every user gone: the instance went, its configuration stays for the
        // next one, which a stream of the device creates on first need.
        Stream later = stream();
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer over, Buffer::allocate(later, 16 * MiB));
        KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool recreated, later.memory());
        EXPECT_EQ(recreated.config().allocator.reserved_limit, 32 * MiB);
        KEEL_EXPECT_ERROR(Buffer::allocate(later, 20 * MiB), KEEL_STATUS_OUT_OF_MEMORY);
    }
    // Nothing uses it now: the default again, for the other tests.
    KEEL_EXPECT_OK(MemoryPool::shared(device(), MemoryConfig{}));
}

TEST_F(CpuMemory, BuffersFencesAndCopiesKeepTheirMemoryAfterEveryHandleAndStream) {
    Buffer survivor;
    Fence fence;
    std::vector<std::uint8_t> out(4096, 0);
    HostCopy copy;
    {
        KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), config()));
        Stream s = stream(memory);
        KEEL_ASSERT_OK_AND_ASSIGN(survivor, Buffer::allocate(s, 4096));
        KEEL_ASSERT_OK(s.memset(survivor, 9));
        KEEL_ASSERT_OK_AND_ASSIGN(fence, s.fence());
        KEEL_ASSERT_OK_AND_ASSIGN(copy, s.copy(out, survivor));
    }  // the last handle and the stream are gone; no leak, nothing dangles
    KEEL_ASSERT_OK(copy.wait());
    EXPECT_EQ(out, std::vector<std::uint8_t>(4096, 9));
    Stream other = stream();
    KEEL_ASSERT_OK(other.wait(fence));
    KEEL_ASSERT_OK(other.memset(survivor, 1));  // still valid memory
    KEEL_ASSERT_OK(survivor.record_stream(other));
    KEEL_ASSERT_OK(other.synchronize());
    survivor.reset();  // frees into its own core, which then goes
    fence = Fence();
}

TEST_F(CpuMemory, AnEmptyStreamIsRejected) {
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), config()));
    Stream s = stream(memory);
    Stream moved = std::move(s);
    auto r = Buffer::allocate(s, 16);  // NOLINT(bugprone-use-after-move): testing the moved-from stream
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(r.error().message().find("empty"), std::string::npos);
}

}  // namespace
}  // namespace keel
