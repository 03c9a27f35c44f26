// PageableStaging on a fake stream: every byte arrives in both directions at
// any size and thread count, host memory is read and written when the stream
// executes the copy (not at enqueue), blocks are reused (no pinned
// allocation in steady state) and bounded, and failures lose no block.
#include "fake_stream.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace keel::staging {
namespace {

using testing::FakeStream;
using testing::HeapPinned;

constexpr std::size_t kChunk = 64 * 1024;

std::vector<unsigned char> test_bytes(std::size_t n, unsigned char seed) {
    std::vector<unsigned char> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(i * 131 + seed + (i >> 12));
    return v;
}

struct Rig {
    explicit Rig(StagingConfig config = small_config(3, 4))
        : counts(std::make_shared<HeapPinned::Counts>()),
          staging(std::make_unique<HeapPinned>(counts), config) {}

    static StagingConfig small_config(unsigned blocks, unsigned threads) {
        StagingConfig c;
        c.pageable.chunk_bytes = kChunk;
        c.pageable.blocks_per_copy = blocks;
        c.pageable.capacity = 64 * kChunk;
        c.copy_threads = threads;
        c.pageable.parallel_min_bytes = 16 * 1024;
        c.copy_slice_min_bytes = 4 * 1024;
        return c;
    }
    std::size_t live_blocks() {
        std::lock_guard lock(counts->mu);
        return counts->live.size();
    }

    std::shared_ptr<HeapPinned::Counts> counts;
    PageableStaging staging;
};

bool to_device(PageableStaging& staging, FakeStream& stream, std::uint64_t base, const void* src,
               std::uint64_t n) {
    FakeStream::Port port(stream, base, true);
    auto r = staging.to_device(port, src, n);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
    return r.ok();
}

bool to_host(PageableStaging& staging, FakeStream& stream, std::uint64_t base, void* dst, std::uint64_t n) {
    FakeStream::Port port(stream, base, false);
    auto r = staging.to_host(port, dst, n);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
    return r.ok();
}

struct Shape {
    unsigned blocks;
    unsigned threads;
};

class PageableStagingShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(PageableStagingShapes, EveryByteArrivesBothWays) {
    Rig rig(Rig::small_config(GetParam().blocks, GetParam().threads));
    for (std::size_t n : {std::size_t{1}, std::size_t{4095}, std::size_t{4096 + 3}, kChunk - 1, kChunk,
                          kChunk + 1, 5 * kChunk + 17, 16 * kChunk}) {
        FakeStream stream(n);
        const auto src = test_bytes(n, static_cast<unsigned char>(n));
        ASSERT_TRUE(to_device(rig.staging, stream, 0, src.data(), n));
        std::vector<unsigned char> back(n, 0);
        ASSERT_TRUE(to_host(rig.staging, stream, 0, back.data(), n));
        stream.synchronize();
        EXPECT_EQ(stream.device(), src) << n;
        EXPECT_EQ(back, src) << n;
        EXPECT_EQ(rig.staging.stats().blocks.lent_bytes, 0u) << n;
    }
}

INSTANTIATE_TEST_SUITE_P(Blocks, PageableStagingShapes,
                         ::testing::Values(Shape{1, 1}, Shape{2, 1}, Shape{3, 1}, Shape{1, 4}, Shape{2, 4},
                                           Shape{3, 4}, Shape{4, 7}),
                         [](const auto& info) {
                             return std::to_string(info.param.blocks) + "blocks" +
                                    std::to_string(info.param.threads) + "threads";
                         });

TEST(PageableStaging, ReadsTheSourceWhenTheStreamGetsThereNotAtEnqueue) {
    Rig rig;
    const std::size_t n = 7 * kChunk + 5;
    FakeStream stream(n, /*held=*/true);
    auto src = test_bytes(n, 1);
    ASSERT_TRUE(to_device(rig.staging, stream, 0, src.data(), n));
    const auto later = test_bytes(n, 2);
    src = later;  // same storage, new bytes, before the stream ran
    stream.release();
    stream.synchronize();
    EXPECT_EQ(stream.device(), later);
}

TEST(PageableStaging, WritesTheDestinationOnlyWhenTheStreamGetsThere) {
    Rig rig;
    const std::size_t n = 6 * kChunk + 100;
    FakeStream stream(n, /*held=*/true);
    stream.device() = test_bytes(n, 3);
    std::vector<unsigned char> dst(n, 0xEE);
    ASSERT_TRUE(to_host(rig.staging, stream, 0, dst.data(), n));
    EXPECT_EQ(dst, std::vector<unsigned char>(n, 0xEE));
    stream.release();
    stream.synchronize();
    EXPECT_EQ(dst, stream.device());
}

TEST(PageableStaging, SteadyStateMakesNoPinnedAllocation) {
    Rig rig;
    const std::size_t n = 9 * kChunk + 3;
    FakeStream stream(n, /*held=*/true);
    const auto src = test_bytes(n, 4);
    std::vector<unsigned char> dst(n);
    ASSERT_TRUE(to_device(rig.staging, stream, 0, src.data(), n));
    ASSERT_TRUE(to_host(rig.staging, stream, 0, dst.data(), n));
    stream.release();
    stream.synchronize();
    const auto first = rig.staging.stats().blocks.allocations;
    EXPECT_EQ(first, 6u);  // two copies in flight together, 3 blocks each
    for (int i = 0; i < 10; ++i) {
        ASSERT_TRUE(to_device(rig.staging, stream, 0, src.data(), n));
        ASSERT_TRUE(to_host(rig.staging, stream, 0, dst.data(), n));
        stream.synchronize();
    }
    EXPECT_EQ(rig.staging.stats().blocks.allocations, first);
    EXPECT_EQ(dst, src);
}

TEST(PageableStaging, StagingMemoryIsBoundedAndACopyMakesDoWithFewerBlocks) {
    auto config = Rig::small_config(3, 2);
    config.pageable.capacity = kChunk;  // one block in all
    Rig rig(config);
    const std::size_t n = 5 * kChunk + 9;
    FakeStream stream(n, /*held=*/true);
    const auto src = test_bytes(n, 5);
    ASSERT_TRUE(to_device(rig.staging, stream, 0, src.data(), n));
    EXPECT_EQ(rig.staging.stats().short_copies, 1u);
    // Held by the first copy until the stream runs: the next finds none and
    // says so without enqueueing anything.
    FakeStream::Port port(stream, 0, true);
    auto second = rig.staging.to_device(port, src.data(), n);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.error().code(), KEEL_STATUS_OUT_OF_MEMORY);
    EXPECT_NE(second.error().message().find("KEEL_PAGEABLE_STAGING_MIB"), std::string::npos)
        << second.error().message();
    EXPECT_EQ(rig.staging.stats().blocks.refusals, 2u);  // the first copy's second block, then this
    EXPECT_EQ(rig.staging.stats().copies, 1u);
    EXPECT_EQ(rig.staging.stats().refused_copies, 1u);
    stream.release();
    stream.synchronize();
    EXPECT_EQ(stream.device(), src);
    EXPECT_LE(rig.staging.stats().blocks.held_bytes, kChunk);
    EXPECT_EQ(rig.live_blocks(), 1u);
}

TEST(PageableStaging, WritesItsStatsInTheAbisFormOnlyAsFarAsTheCallersStruct) {
    auto config = Rig::small_config(2, 2);
    Rig rig(config);
    const std::size_t n = 3 * kChunk;
    FakeStream stream(n);
    const auto src = test_bytes(n, 3);
    ASSERT_TRUE(to_device(rig.staging, stream, 0, src.data(), n));
    stream.synchronize();

    keel_pageable_staging_stats full{};
    full.struct_size = sizeof full;
    ASSERT_TRUE(rig.staging.write_stats(&full).ok());
    const auto stats = rig.staging.stats();
    EXPECT_EQ(full.struct_size, sizeof full);
    EXPECT_EQ(full.copies, 1u);
    EXPECT_EQ(full.pinned_allocations, stats.blocks.allocations);
    EXPECT_EQ(full.held_bytes, stats.blocks.held_bytes);
    EXPECT_EQ(full.lent_bytes, 0u);
    EXPECT_EQ(full.capacity_bytes, config.pageable.capacity);
    EXPECT_EQ(full.host_copy_threads, stats.host_threads);

    // A caller built against an older layout: nothing past its size changes.
    keel_pageable_staging_stats older{};
    older.struct_size = KEEL_STRUCT_SIZE(keel_pageable_staging_stats, short_copies);
    older.refused_copies = 77;
    ASSERT_TRUE(rig.staging.write_stats(&older).ok());
    EXPECT_EQ(older.copies, 1u);
    EXPECT_EQ(older.refused_copies, 77u);

    auto null_out = rig.staging.write_stats(nullptr);
    ASSERT_FALSE(null_out.ok());
    EXPECT_EQ(null_out.error().code(), KEEL_STATUS_INVALID_ARGUMENT);
}

TEST(PageableStaging, AFailedStreamTouchesNoDestinationAndLosesNoBlock) {
    for (std::uint64_t fail_at = 0; fail_at < 12; ++fail_at) {
        Rig rig;
        const std::size_t n = 5 * kChunk;
        FakeStream stream(n);
        stream.device() = test_bytes(n, 6);
        stream.fail_from(fail_at);
        std::vector<unsigned char> dst(n, 0xAB);
        ASSERT_TRUE(to_host(rig.staging, stream, 0, dst.data(), n));
        stream.synchronize();
        // Chunk k is delivered by op 2k+1; once an op fails, no later chunk.
        for (std::size_t k = 0; k < 5; ++k) {
            const bool delivered = 2 * k + 1 < fail_at;
            const auto first = dst.begin() + static_cast<std::ptrdiff_t>(k * kChunk);
            const std::vector<unsigned char> got(first, first + kChunk);
            if (delivered)
                EXPECT_EQ(got, std::vector<unsigned char>(stream.device().begin() + k * kChunk,
                                                          stream.device().begin() + (k + 1) * kChunk))
                    << fail_at << " " << k;
            else EXPECT_EQ(got, std::vector<unsigned char>(kChunk, 0xAB)) << fail_at << " " << k;
        }
        const auto stats = rig.staging.stats().blocks;
        EXPECT_EQ(stats.lent_bytes, 0u) << fail_at;
        // The blocks went back for reuse: the next copy allocates nothing.
        const auto allocations = stats.allocations;
        FakeStream healthy(n);
        const auto src = test_bytes(n, 7);
        ASSERT_TRUE(to_device(rig.staging, healthy, 0, src.data(), n));
        healthy.synchronize();
        EXPECT_EQ(healthy.device(), src);
        EXPECT_EQ(rig.staging.stats().blocks.allocations, allocations) << fail_at;
    }
}

TEST(PageableStaging, AnEnqueueFailingHalfWayReportsItAndNeverReusesBlocksInUse) {
    for (std::uint64_t refuse = 0; refuse < 9; ++refuse) {
        Rig rig;
        const std::size_t n = 4 * kChunk;
        FakeStream stream(n, /*held=*/true);
        stream.refuse_enqueue(refuse);
        const auto src = test_bytes(n, 8);
        FakeStream::Port port(stream, 0, true);
        auto r = rig.staging.to_device(port, src.data(), n);
        ASSERT_FALSE(r.ok()) << refuse;
        EXPECT_NE(r.error().message().find("enqueue refused"), std::string::npos);
        stream.release();
        stream.synchronize();
        const auto stats = rig.staging.stats().blocks;
        EXPECT_EQ(stats.lent_bytes, 0u) << refuse;
        // Nothing enqueued: the blocks are idle again; else they are retired.
        auto again = rig.staging.to_device(port, src.data(), kChunk);
        ASSERT_TRUE(again.ok());
        stream.synchronize();
        if (refuse == 0) EXPECT_EQ(rig.staging.stats().blocks.allocations, stats.allocations);
        else EXPECT_GT(rig.staging.stats().blocks.allocations, stats.allocations);
    }
}

// A caller that got an error may free or reuse its host memory at once:
// the steps enqueued before the failure must not read or write it when the
// stream gets to them.
TEST(PageableStaging, HostMemoryIsNotTouchedAfterAFailedEnqueueReturned) {
    const std::size_t n = 4 * kChunk;
    // Outlives every iteration: freed memory full of 0xEE could come back
    // as a staging block.
    std::vector<unsigned char> host(n);
    for (bool to_device : {true, false}) {
        // Every enqueue after the first: a step and a device copy per chunk,
        // and to the device a last step that gives the blocks back.
        const std::uint64_t enqueues = to_device ? 9 : 8;
        for (std::uint64_t refuse = 1; refuse < enqueues; ++refuse) {
            SCOPED_TRACE(::testing::Message() << (to_device ? "to the device" : "to the host")
                                              << ", enqueue " << refuse << " refused");
            Rig rig;
            FakeStream stream(n, /*held=*/true);
            std::fill(stream.device().begin(), stream.device().end(), 0x11);
            for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<unsigned char>(i & 0x7F);
            stream.refuse_enqueue(refuse);
            FakeStream::Port port(stream, 0, to_device);
            auto r = to_device ? rig.staging.to_device(port, host.data(), n) : rig.staging.to_host(port, host.data(), n);
            ASSERT_FALSE(r.ok());
            std::fill(host.begin(), host.end(), 0xEE);  // reused, as the error allows
            stream.release();
            stream.synchronize();
            if (to_device) {
                EXPECT_EQ(std::count(stream.device().begin(), stream.device().end(), 0xEE), 0)
                    << "a step read the source after the enqueue failed";
            } else {
                EXPECT_EQ(std::count(host.begin(), host.end(), 0xEE), static_cast<std::ptrdiff_t>(n))
                    << "a step wrote the destination after the enqueue failed";
            }
            EXPECT_EQ(rig.staging.stats().blocks.lent_bytes, 0u);
        }
    }
}

// At shutdown a stream that failed may still have steps queued: CUDA runs
// every accepted callback, also after a device error, while
// cudaStreamSynchronize returns that error at once. release_all() waits for
// them, so no step uses the staging after it is gone and no block is freed
// by a step (a driver callback thread, where the driver may not be called).
TEST(PageableStaging, ReleaseAllWaitsForTheStepsOfCopiesStillQueued) {
    const std::size_t n = 3 * kChunk + 5;
    const auto src = test_bytes(n, 4);
    std::vector<unsigned char> dst(n, 0);
    FakeStream stream(n, /*held=*/true);
    auto rig = std::make_unique<Rig>();
    ASSERT_TRUE(to_device(rig->staging, stream, 0, src.data(), n));
    ASSERT_TRUE(to_host(rig->staging, stream, 0, dst.data(), n));
    std::thread opener([&stream] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        stream.release();
    });
    rig->staging.release_all();
    EXPECT_EQ(rig->live_blocks(), 0u) << "release_all returned before the queued steps gave their blocks back";
    opener.join();
    stream.synchronize();
    EXPECT_EQ(dst, src);
    rig.reset();
}

TEST(PageableStaging, SeveralThreadsOnSeveralStreamsAtOnce) {
    Rig rig(Rig::small_config(3, 3));
    constexpr int kThreads = 4;
    const std::size_t n = 6 * kChunk + 11;
    std::vector<std::thread> threads;
    std::vector<int> failures(kThreads, 0);
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            FakeStream stream(n);
            const auto src = test_bytes(n, static_cast<unsigned char>(t));
            std::vector<unsigned char> dst(n);
            for (int i = 0; i < 20; ++i) {
                FakeStream::Port in(stream, 0, true), out(stream, 0, false);
                auto a = rig.staging.to_device(in, src.data(), n);
                auto b = rig.staging.to_host(out, dst.data(), n);
                stream.synchronize();
                if (!a.ok() || !b.ok() || dst != src) ++failures[static_cast<std::size_t>(t)];
            }
        });
    }
    // A framework reads the stats while copies run (Sync).
    std::atomic<bool> done{false};
    std::uint64_t inconsistent = 0;
    std::thread reader([&] {
        while (!done.load()) {
            keel_pageable_staging_stats s{};
            s.struct_size = sizeof s;
            if (!rig.staging.write_stats(&s).ok() || s.lent_bytes > s.held_bytes) ++inconsistent;
        }
    });
    for (auto& th : threads) th.join();
    done = true;
    reader.join();
    for (int f : failures) EXPECT_EQ(f, 0);
    EXPECT_EQ(inconsistent, 0u);
    EXPECT_EQ(rig.staging.stats().blocks.lent_bytes, 0u);
    EXPECT_EQ(rig.staging.stats().copies, 2u * kThreads * 20);
}

}  // namespace
}  // namespace keel::staging
