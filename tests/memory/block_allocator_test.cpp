// The caching allocator's algorithms on the deterministic fake device: the
// fake reports any access that races an unfinished access of another stream
// and any raw free of memory still in use, so reuse that is too early fails.
#include "fake_device.hpp"

#include "memory/block_allocator.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <random>
#include <thread>

namespace keel::memory {
namespace {

using testing::FakeDevice;

struct AllocatorRig {
    explicit AllocatorRig(FakeDevice::Options device_options = {}, AllocatorConfig config = {},
                 BackPressureConfig limits = {},
                 std::chrono::microseconds reclaim = std::chrono::microseconds{0})
        : device(device_options),
          events(device),
          tracker(device, events, limits.max_queued_per_stream, reclaim),
          allocator(device, events, tracker, config, limits) {}
    ~AllocatorRig() {
        device.complete_all();
        tracker.shutdown();
    }

    Block* alloc(keel_stream s, std::uint64_t size) {
        auto r = allocator.allocate(s, size);
        EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
        return r.ok() ? *r : nullptr;
    }
    static keel_device_addr addr(const Block* b) { return BlockAllocator::address(b); }

    FakeDevice device;
    EventPool events;
    CompletionTracker tracker;
    BlockAllocator allocator;
};

TEST(BlockAllocator, FreedBlockIsReusedBySameStreamWithoutRawAllocation) {
    AllocatorRig rig;
    keel_stream s = rig.device.make_stream();
    Block* a = rig.alloc(s, 4000);
    const keel_device_addr first = AllocatorRig::addr(a);
    rig.allocator.free(a, {});
    Block* b = rig.alloc(s, 4000);
    EXPECT_EQ(AllocatorRig::addr(b), first);
    EXPECT_EQ(rig.allocator.stats().raw_allocations, 1u);
    EXPECT_EQ(rig.allocator.stats().cache_hits, 1u);
    rig.allocator.free(b, {});
}

TEST(BlockAllocator, SmallRequestsAreRoundedAndShareOneSegment) {
    AllocatorRig rig;
    keel_stream s = rig.device.make_stream();
    Block* a = rig.alloc(s, 1000);
    Block* b = rig.alloc(s, 1);
    EXPECT_EQ(BlockAllocator::size(a), 1024u);
    EXPECT_EQ(BlockAllocator::size(b), 512u);
    EXPECT_EQ(AllocatorRig::addr(b), AllocatorRig::addr(a) + 1024);
    const AllocatorStats st = rig.allocator.stats();
    EXPECT_EQ(st.segment_count, 1u);
    EXPECT_EQ(st.reserved_bytes, 2 * MiB);
    EXPECT_EQ(st.allocated_bytes, 1536u);
    EXPECT_EQ(st.requested_bytes, 1001u);
    rig.allocator.free(a, {});
    rig.allocator.free(b, {});
}

AllocatorConfig without_exact_cache() {
    AllocatorConfig config;
    config.exact_cache_depth = 0;
    return config;
}

TEST(BlockAllocator, FreeNeighboursMergeBackIntoOneBlock) {
    AllocatorRig rig({}, without_exact_cache());
    keel_stream s = rig.device.make_stream();
    Block* a = rig.alloc(s, 4096);
    Block* b = rig.alloc(s, 4096);
    Block* c = rig.alloc(s, 4096);
    rig.allocator.free(a, {});
    rig.allocator.free(c, {});
    rig.allocator.free(b, {});  // joins both neighbours and the segment's tail
    const MemorySnapshot snap = rig.allocator.snapshot();
    ASSERT_EQ(snap.segments.size(), 1u);
    ASSERT_EQ(snap.segments[0].blocks.size(), 1u);
    EXPECT_EQ(snap.segments[0].blocks[0].state, BlockState::free);
    EXPECT_EQ(snap.segments[0].blocks[0].size, 2 * MiB);
    // A request that needs the merged space is served from the cache.
    Block* big = rig.alloc(s, 1 * MiB);
    EXPECT_EQ(rig.allocator.stats().raw_allocations, 1u);
    rig.allocator.free(big, {});
}

TEST(BlockAllocator, ExactSizeCacheServesTheSameSizeWithoutMerging) {
    AllocatorRig rig;
    keel_stream s = rig.device.make_stream();
    Block* a = rig.alloc(s, 4096);
    Block* b = rig.alloc(s, 4096);
    const keel_device_addr a_addr = AllocatorRig::addr(a);
    rig.allocator.free(a, {});
    rig.allocator.free(b, {});
    // Parked, not merged: three free blocks in the snapshot.
    EXPECT_EQ(rig.allocator.snapshot().segments[0].blocks.size(), 3u);
    Block* c = rig.alloc(s, 4000);  // the same rounded size: the most recent
    EXPECT_EQ(AllocatorRig::addr(c), AllocatorRig::addr(b));
    Block* d = rig.alloc(s, 4096);
    EXPECT_EQ(AllocatorRig::addr(d), a_addr);
    rig.allocator.free(c, {});
    rig.allocator.free(d, {});
}

TEST(BlockAllocator, ParkedBlocksAreMergedBeforeAnyRawAllocation) {
    AllocatorRig rig;
    keel_stream s = rig.device.make_stream();
    std::vector<Block*> quarter;
    for (int i = 0; i < 4; ++i) quarter.push_back(rig.alloc(s, 512 * KiB));  // fills 2 MiB
    for (Block* b : quarter) rig.allocator.free(b, {});
    Block* half = rig.alloc(s, 1 * MiB);  // needs two merged quarters
    EXPECT_EQ(rig.allocator.stats().raw_allocations, 1u);
    rig.allocator.free(half, {});
    ASSERT_TRUE(rig.allocator.release_cached().ok());
    EXPECT_EQ(rig.allocator.stats().reserved_bytes, 0u);  // parked blocks are released too
}

TEST(BlockAllocator, LargeParkedBlocksAreMergedBeforeAnyRawAllocation) {
    AllocatorRig rig;
    keel_stream s = rig.device.make_stream();
    std::vector<Block*> fifths;
    for (int i = 0; i < 5; ++i) fifths.push_back(rig.alloc(s, 4 * MiB));  // fills 20 MiB
    for (Block* b : fifths) rig.allocator.free(b, {});
    Block* again = rig.alloc(s, 4 * MiB);  // exact-size reuse
    EXPECT_EQ(AllocatorRig::addr(again), AllocatorRig::addr(fifths.back()));
    rig.allocator.free(again, {});
    Block* big = rig.alloc(s, 12 * MiB);  // needs three merged fifths
    EXPECT_EQ(rig.allocator.stats().raw_allocations, 1u);
    rig.allocator.free(big, {});
}

TEST(BlockAllocator, LargeBlocksAreSplitOnlyWhenTheRestIsLarge) {
    AllocatorRig rig;
    keel_stream s = rig.device.make_stream();
    Block* a = rig.alloc(s, 5 * MiB);  // 20 MiB segment, 15 MiB rest kept free
    EXPECT_EQ(BlockAllocator::size(a), 5 * MiB);
    Block* b = rig.alloc(s, 14 * MiB + 512 * KiB);  // rest of 0.5 MiB is not split off
    EXPECT_EQ(BlockAllocator::size(b), 15 * MiB);
    EXPECT_EQ(rig.allocator.stats().segment_count, 1u);
    Block* small = rig.alloc(s, 1000);  // small requests never use large segments
    EXPECT_EQ(rig.allocator.stats().segment_count, 2u);
    rig.allocator.free(a, {});
    rig.allocator.free(b, {});
    rig.allocator.free(small, {});
}

TEST(BlockAllocator, AnotherStreamNeverGetsAFreedBlock) {
    AllocatorRig rig;
    keel_stream s1 = rig.device.make_stream();
    keel_stream s2 = rig.device.make_stream();
    Block* a = rig.alloc(s1, 4096);
    const keel_device_addr first = AllocatorRig::addr(a);
    rig.device.enqueue_access(s1, first, 4096);  // unfinished use on s1
    rig.allocator.free(a, {});
    Block* b = rig.alloc(s2, 4096);
    EXPECT_NE(AllocatorRig::addr(b), first);
    rig.device.enqueue_access(s2, AllocatorRig::addr(b), 4096);
    EXPECT_TRUE(rig.device.violations().empty());
    rig.allocator.free(b, {});
}

TEST(BlockAllocator, UseOnAnotherStreamWithoutRecordIsCaughtByTheChecker) {
    // The oracle works: the classic bug (no record_stream) is detected.
    AllocatorRig rig;
    keel_stream s1 = rig.device.make_stream();
    keel_stream s2 = rig.device.make_stream();
    Block* a = rig.alloc(s1, 4096);
    rig.device.enqueue_access(s2, AllocatorRig::addr(a), 4096);  // unfinished use on s2
    rig.allocator.free(a, {});                          // not recorded: reusable at once
    Block* b = rig.alloc(s1, 4096);
    ASSERT_EQ(AllocatorRig::addr(b), AllocatorRig::addr(a));
    rig.device.enqueue_access(s1, AllocatorRig::addr(b), 4096);
    EXPECT_FALSE(rig.device.violations().empty());
    rig.allocator.free(b, {});
}

TEST(BlockAllocator, RecordedUseKeepsTheBlockPendingUntilTheUseCompletes) {
    AllocatorRig rig;
    keel_stream s1 = rig.device.make_stream();
    keel_stream s2 = rig.device.make_stream();
    Block* a = rig.alloc(s1, 4096);
    const keel_device_addr first = AllocatorRig::addr(a);
    std::vector<RecordedUse> uses;
    rig.device.enqueue_access(s2, first, 4096);
    ASSERT_TRUE(rig.allocator.record_use(a, s2, uses).ok());
    rig.allocator.free(a, std::move(uses));
    EXPECT_EQ(rig.allocator.stats().pending_free_count, 1u);

    Block* b = rig.alloc(s1, 4096);  // must not get the pending block
    EXPECT_NE(AllocatorRig::addr(b), first);
    rig.device.enqueue_access(s1, AllocatorRig::addr(b), 4096);

    rig.device.complete(s2);
    rig.allocator.sweep();
    EXPECT_EQ(rig.allocator.stats().pending_free_count, 0u);
    Block* c = rig.alloc(s1, 4096);
    EXPECT_EQ(AllocatorRig::addr(c), first);
    rig.device.enqueue_access(s1, AllocatorRig::addr(c), 4096);
    EXPECT_TRUE(rig.device.violations().empty()) << rig.device.violations().front();
    rig.allocator.free(b, {});
    rig.allocator.free(c, {});
}

TEST(BlockAllocator, RecordingOnTheOwnStreamIsANoOp) {
    AllocatorRig rig;
    keel_stream s1 = rig.device.make_stream();
    Block* a = rig.alloc(s1, 4096);
    std::vector<RecordedUse> uses;
    ASSERT_TRUE(rig.allocator.record_use(a, s1, uses).ok());
    EXPECT_TRUE(uses.empty());
    rig.allocator.free(a, std::move(uses));
    EXPECT_EQ(rig.allocator.stats().pending_free_count, 0u);
}

TEST(BlockAllocator, RepeatedRecordsOnOneStreamKeepOneUseAndCoverTheLatestUse) {
    AllocatorRig rig;
    keel_stream s1 = rig.device.make_stream();
    keel_stream s2 = rig.device.make_stream();
    Block* a = rig.alloc(s1, 4096);
    std::vector<RecordedUse> uses;
    rig.device.enqueue_access(s2, AllocatorRig::addr(a), 4096);
    ASSERT_TRUE(rig.allocator.record_use(a, s2, uses).ok());
    rig.device.enqueue_access(s2, AllocatorRig::addr(a), 4096);
    ASSERT_TRUE(rig.allocator.record_use(a, s2, uses).ok());
    EXPECT_EQ(uses.size(), 1u);
    EXPECT_EQ(rig.device.counters().events_created, 0u);  // recorded at the free
    rig.allocator.free(a, std::move(uses));
    EXPECT_EQ(rig.device.counters().events_created, 1u);
    rig.device.complete(s2, 1);  // only the first use is done
    rig.allocator.sweep();
    EXPECT_EQ(rig.allocator.stats().pending_free_count, 1u);
    rig.device.complete(s2);
    rig.allocator.sweep();
    EXPECT_EQ(rig.allocator.stats().pending_free_count, 0u);
}

TEST(BlockAllocator, AStuckStreamDoesNotHoldBackBlocksWaitingOnOtherStreams) {
    AllocatorRig rig;
    keel_stream s1 = rig.device.make_stream();
    keel_stream stuck = rig.device.make_stream();
    keel_stream moving = rig.device.make_stream();
    rig.device.set_stuck(stuck, true);
    Block* a = rig.alloc(s1, 4096);  // freed first, used on the stuck stream
    Block* b = rig.alloc(s1, 4096);  // freed second, used on the moving stream
    const keel_device_addr b_addr = AllocatorRig::addr(b);
    std::vector<RecordedUse> ua, ub;
    rig.device.enqueue_access(stuck, AllocatorRig::addr(a), 4096);
    ASSERT_TRUE(rig.allocator.record_use(a, stuck, ua).ok());
    rig.device.enqueue_access(moving, b_addr, 4096);
    ASSERT_TRUE(rig.allocator.record_use(b, moving, ub).ok());
    rig.allocator.free(a, std::move(ua));
    rig.allocator.free(b, std::move(ub));
    rig.device.complete(moving);
    rig.allocator.sweep();
    const AllocatorStats st = rig.allocator.stats();
    EXPECT_EQ(st.pending_free_count, 1u);
    EXPECT_EQ(st.pending_free_bytes, 4096u);
    EXPECT_TRUE(rig.device.violations().empty());
    rig.device.set_stuck(stuck, false);
}

// PyTorch's record_stream: the event is recorded at the free, so a use
// enqueued after record_stream (but before the free) is covered too.
TEST(BlockAllocator, RecordStreamBeforeTheUseIsEnqueuedStillCoversTheUse) {
    AllocatorRig rig;
    keel_stream s1 = rig.device.make_stream();
    keel_stream s2 = rig.device.make_stream();
    Block* a = rig.alloc(s1, 4096);
    const keel_device_addr first = AllocatorRig::addr(a);
    std::vector<RecordedUse> uses;
    ASSERT_TRUE(rig.allocator.record_use(a, s2, uses).ok());  // before the use
    EXPECT_EQ(rig.device.counters().events_created, 0u);      // no plugin call at record time
    rig.device.enqueue_access(s2, first, 4096);
    rig.allocator.free(a, std::move(uses));
    EXPECT_EQ(rig.allocator.stats().pending_free_count, 1u);
    Block* b = rig.alloc(s1, 4096);
    EXPECT_NE(AllocatorRig::addr(b), first);
    rig.device.complete(s2);
    rig.allocator.sweep();
    EXPECT_EQ(rig.allocator.stats().pending_free_count, 0u);
    Block* c = rig.alloc(s1, 4096);
    EXPECT_EQ(AllocatorRig::addr(c), first);
    rig.device.enqueue_access(s1, AllocatorRig::addr(c), 4096);
    EXPECT_TRUE(rig.device.violations().empty()) << rig.device.violations().front();
    rig.allocator.free(b, {});
    rig.allocator.free(c, {});
}

// Events are recorded at the free: each pending block waits for everything
// its recorded stream enqueued before the free, not only up to the record.
TEST(BlockAllocator, APendingBlockWaitsForAllWorkEnqueuedBeforeItsFree) {
    AllocatorRig rig;
    keel_stream s1 = rig.device.make_stream();
    keel_stream s2 = rig.device.make_stream();
    Block* early = rig.alloc(s1, 4096);
    Block* late = rig.alloc(s1, 4096);
    std::vector<RecordedUse> ue, ul;
    rig.device.enqueue_access(s2, AllocatorRig::addr(early), 4096);
    ASSERT_TRUE(rig.allocator.record_use(early, s2, ue).ok());
    rig.device.enqueue_access(s2, AllocatorRig::addr(late), 4096);
    ASSERT_TRUE(rig.allocator.record_use(late, s2, ul).ok());
    rig.device.enqueue_access(s2, AllocatorRig::addr(early), 4096);  // a later use of `early`, not re-recorded
    rig.allocator.free(late, std::move(ul));
    rig.allocator.free(early, std::move(ue));
    rig.device.complete(s2, 2);
    rig.allocator.sweep();
    EXPECT_EQ(rig.allocator.stats().pending_free_count, 2u);  // both wait for the third access
    rig.device.complete(s2);
    rig.allocator.sweep();
    EXPECT_EQ(rig.allocator.stats().pending_free_count, 0u);
    Block* again = rig.alloc(s1, 8192);
    rig.device.enqueue_access(s1, AllocatorRig::addr(again), 8192);
    EXPECT_TRUE(rig.device.violations().empty()) << rig.device.violations().front();
    rig.allocator.free(again, {});
}

TEST(BlockAllocator, PendingFreesComeBackWhenWorkCompletesEvenIfNothingAllocates) {
    AllocatorRig rig({}, {}, {}, std::chrono::microseconds{200});  // reclaimer thread on
    keel_stream s1 = rig.device.make_stream();
    keel_stream s2 = rig.device.make_stream();
    Block* a = rig.alloc(s1, 4096);
    std::vector<RecordedUse> uses;
    rig.device.enqueue_access(s2, AllocatorRig::addr(a), 4096);
    ASSERT_TRUE(rig.allocator.record_use(a, s2, uses).ok());
    rig.allocator.free(a, std::move(uses));
    rig.device.complete(s2);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (rig.allocator.stats().pending_free_count != 0 &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(rig.allocator.stats().pending_free_count, 0u);
    EXPECT_EQ(rig.allocator.stats().cached_bytes, 2 * MiB);
}

TEST(BlockAllocator, WaitAtReuseOrdersTheStreamOnTheDeviceInsteadOfWaiting) {
    AllocatorConfig config;
    config.wait_at_reuse = true;
    AllocatorRig rig({}, config);
    keel_stream s1 = rig.device.make_stream();
    keel_stream s2 = rig.device.make_stream();
    Block* a = rig.alloc(s1, 1 * MiB);
    Block* filler = rig.alloc(s1, 1 * MiB);  // the small segment is now full
    const keel_device_addr first = AllocatorRig::addr(a);
    std::vector<RecordedUse> uses;
    rig.device.enqueue_access(s2, first, 1 * MiB);
    ASSERT_TRUE(rig.allocator.record_use(a, s2, uses).ok());
    rig.allocator.free(a, std::move(uses));

    Block* b = rig.alloc(s1, 1 * MiB);
    EXPECT_EQ(AllocatorRig::addr(b), first);  // reused while the use is unfinished
    EXPECT_EQ(rig.allocator.stats().raw_allocations, 1u);
    EXPECT_EQ(rig.allocator.stats().reuse_waits, 1u);
    EXPECT_EQ(rig.device.counters().stream_waits, 1u);
    EXPECT_EQ(rig.device.counters().host_syncs, 0u);
    rig.device.enqueue_access(s1, first, 1 * MiB);  // ordered after s2's use by the wait
    EXPECT_TRUE(rig.device.violations().empty()) << rig.device.violations().front();
    rig.device.complete(s1);
    EXPECT_EQ(rig.device.unfinished(s1), 2u);  // the wait holds s1 behind s2
    rig.device.complete(s2);
    rig.device.complete(s1);
    EXPECT_EQ(rig.device.unfinished(s1), 0u);
    rig.allocator.free(b, {});
    rig.allocator.free(filler, {});
}

TEST(BlockAllocator, OutOfMemoryLadderRecoversMemoryHeldByOtherStreams) {
    FakeDevice::Options device;
    device.capacity = 6 * MiB;
    AllocatorRig rig(device);
    keel_stream s1 = rig.device.make_stream();
    keel_stream s2 = rig.device.make_stream();
    keel_stream s3 = rig.device.make_stream();
    keel_stream user = rig.device.make_stream();
    // s2: a cached (free) segment.
    rig.allocator.free(rig.alloc(s2, 2 * MiB), {});
    // s3: a segment pending on an unfinished use on `user`.
    Block* p = rig.alloc(s3, 2 * MiB);
    std::vector<RecordedUse> uses;
    rig.device.enqueue_access(user, AllocatorRig::addr(p), 2 * MiB);
    ASSERT_TRUE(rig.allocator.record_use(p, user, uses).ok());
    rig.allocator.free(p, std::move(uses));
    EXPECT_EQ(rig.allocator.stats().reserved_bytes, 4 * MiB);

    // 6 MiB on s1 fits only once both streams' memory is back.
    Block* big = rig.alloc(s1, 6 * MiB);
    ASSERT_NE(big, nullptr);
    const AllocatorStats st = rig.allocator.stats();
    EXPECT_EQ(st.oom_retries, 1u);
    EXPECT_EQ(st.ooms, 0u);
    EXPECT_EQ(st.raw_frees, 2u);
    EXPECT_EQ(st.pending_free_count, 0u);
    EXPECT_EQ(st.reserved_bytes, 6 * MiB);
    EXPECT_TRUE(rig.device.violations().empty()) << rig.device.violations().front();
    rig.allocator.free(big, {});
}

TEST(BlockAllocator, OutOfMemoryErrorCarriesTheStatistics) {
    FakeDevice::Options device;
    device.capacity = 4 * MiB;
    AllocatorRig rig(device);
    keel_stream s1 = rig.device.make_stream();
    Block* held = rig.alloc(s1, 3 * MiB);
    auto r = rig.allocator.allocate(s1, 3 * MiB);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_OUT_OF_MEMORY);
    const std::string& msg = r.error().message();
    EXPECT_NE(msg.find("[BlockAllocator::allocate]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("reserved 3.0 MiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("allocated 3.0 MiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;  // the plugin's reason
    EXPECT_EQ(rig.allocator.stats().ooms, 1u);
    rig.allocator.free(held, {});
}

TEST(BlockAllocator, ReservedLimitActsAsOutOfMemory) {
    AllocatorConfig config;
    config.reserved_limit = 4 * MiB;
    AllocatorRig rig({}, config);
    keel_stream s1 = rig.device.make_stream();
    Block* a = rig.alloc(s1, 3 * MiB);
    auto r = rig.allocator.allocate(s1, 2 * MiB);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("reserved limit"), std::string::npos);
    rig.allocator.free(a, {});
    Block* b = rig.alloc(s1, 2 * MiB);  // served from a's freed block
    EXPECT_NE(b, nullptr);
    rig.allocator.free(b, {});
}

TEST(BlockAllocator, PendingFreeCountBoundMakesTheHostWaitForTheOldest) {
    BackPressureConfig limits;
    limits.max_pending_free_count = 2;
    AllocatorRig rig({}, {}, limits);
    keel_stream s1 = rig.device.make_stream();
    keel_stream s2 = rig.device.make_stream();
    for (int i = 0; i < 5; ++i) {
        Block* a = rig.alloc(s1, 4096);
        std::vector<RecordedUse> uses;
        rig.device.enqueue_access(s2, AllocatorRig::addr(a), 4096);
        ASSERT_TRUE(rig.allocator.record_use(a, s2, uses).ok());
        rig.allocator.free(a, std::move(uses));
        EXPECT_LE(rig.allocator.stats().pending_free_count, 2u);
    }
    EXPECT_EQ(rig.allocator.stats().pending_free_waits, 3u);
    EXPECT_TRUE(rig.device.violations().empty());
}

TEST(BlockAllocator, SteadyStateCrossStreamFreesCreateNoEvents) {
    AllocatorRig rig;
    keel_stream s1 = rig.device.make_stream();
    keel_stream s2 = rig.device.make_stream();
    for (int i = 0; i < 100; ++i) {
        Block* a = rig.alloc(s1, 8192);
        std::vector<RecordedUse> uses;
        rig.device.enqueue_access(s2, AllocatorRig::addr(a), 8192);
        ASSERT_TRUE(rig.allocator.record_use(a, s2, uses).ok());
        rig.allocator.free(a, std::move(uses));
        rig.device.complete(s2);
        rig.allocator.sweep();
    }
    EXPECT_EQ(rig.device.counters().events_created, 1u);
    EXPECT_EQ(rig.allocator.stats().raw_allocations, 1u);
}

TEST(BlockAllocator, ReleaseCachedReturnsOnlyEntirelyFreeSegments) {
    AllocatorRig rig;
    keel_stream s1 = rig.device.make_stream();
    Block* keep = rig.alloc(s1, 4096);         // small segment stays
    rig.allocator.free(rig.alloc(s1, 5 * MiB), {});  // large segment becomes free
    ASSERT_TRUE(rig.allocator.release_cached().ok());
    const AllocatorStats st = rig.allocator.stats();
    EXPECT_EQ(st.raw_frees, 1u);
    EXPECT_EQ(st.reserved_bytes, 2 * MiB);
    EXPECT_EQ(rig.device.counters().device_frees, 1u);
    rig.allocator.free(keep, {});
}

TEST(BlockAllocator, ASegmentThePluginRefusesToFreeStaysCached) {
    FakeDevice::Options device;
    device.refuse_late_free = true;
    AllocatorRig rig(device);
    keel_stream s1 = rig.device.make_stream();
    keel_stream s2 = rig.device.make_stream();
    Block* a = rig.alloc(s1, 5 * MiB);
    rig.device.enqueue_access(s2, AllocatorRig::addr(a), 5 * MiB);  // the bug: no record_use
    rig.allocator.free(a, {});
    auto released = rig.allocator.release_cached();
    ASSERT_FALSE(released.ok());
    EXPECT_EQ(released.error().code(), KEEL_STATUS_FAILED_PRECONDITION);
    EXPECT_NE(released.error().message().find("late free"), std::string::npos);
    EXPECT_EQ(rig.allocator.stats().reserved_bytes, 20 * MiB);  // still ours, still cached
    EXPECT_EQ(rig.allocator.stats().cached_bytes, 20 * MiB);
    rig.device.complete(s2);
    ASSERT_TRUE(rig.allocator.release_cached().ok());
    EXPECT_EQ(rig.allocator.stats().reserved_bytes, 0u);
}

TEST(BlockAllocator, SnapshotShowsSegmentsBlocksStatesAndStreams) {
    AllocatorRig rig;
    keel_stream s1 = rig.device.make_stream();
    keel_stream s2 = rig.device.make_stream();
    Block* a = rig.alloc(s1, 4096);
    Block* b = rig.alloc(s1, 4096);
    std::vector<RecordedUse> uses;
    rig.device.enqueue_access(s2, AllocatorRig::addr(b), 4096);
    ASSERT_TRUE(rig.allocator.record_use(b, s2, uses).ok());
    rig.allocator.free(b, std::move(uses));
    const MemorySnapshot snap = rig.allocator.snapshot();
    ASSERT_EQ(snap.segments.size(), 1u);
    const SegmentSnapshot& seg = snap.segments[0];
    EXPECT_EQ(seg.stream, s1);
    EXPECT_TRUE(seg.small);
    ASSERT_EQ(seg.blocks.size(), 3u);
    EXPECT_EQ(seg.blocks[0].state, BlockState::allocated);
    EXPECT_EQ(seg.blocks[0].requested, 4096u);
    EXPECT_EQ(seg.blocks[1].state, BlockState::pending);
    EXPECT_EQ(seg.blocks[2].state, BlockState::free);
    EXPECT_EQ(seg.blocks[2].size, 2 * MiB - 8192);
    EXPECT_NE(snap.to_string().find("pending"), std::string::npos);
    rig.allocator.free(a, {});
}

TEST(BlockAllocator, PeaksTrackTheHighWaterMarkAndCanBeReset) {
    AllocatorRig rig;
    keel_stream s1 = rig.device.make_stream();
    Block* a = rig.alloc(s1, 1 * MiB);
    Block* b = rig.alloc(s1, 1 * MiB);
    rig.allocator.free(a, {});
    rig.allocator.free(b, {});
    EXPECT_EQ(rig.allocator.stats().peak_allocated_bytes, 2 * MiB);
    rig.allocator.reset_peaks();
    EXPECT_EQ(rig.allocator.stats().peak_allocated_bytes, 0u);
    rig.allocator.free(rig.alloc(s1, 512), {});
    EXPECT_EQ(rig.allocator.stats().peak_allocated_bytes, 512u);
}

TEST(BlockAllocator, PeaksStayExactWhenFreedBytesAreReusedInThePool) {
    AllocatorRig rig;
    keel_stream s = rig.device.make_stream();
    rig.allocator.free(rig.alloc(s, 1 * MiB), {});
    Block* a = rig.alloc(s, 512 * KiB);
    Block* b = rig.alloc(s, 512 * KiB);
    EXPECT_EQ(rig.allocator.stats().allocated_bytes, 1 * MiB);
    EXPECT_EQ(rig.allocator.stats().peak_allocated_bytes, 1 * MiB);
    Block* c = rig.alloc(s, 4 * KiB);
    EXPECT_EQ(rig.allocator.stats().peak_allocated_bytes, 1 * MiB + 4 * KiB);
    for (Block* x : {a, b, c}) rig.allocator.free(x, {});
    EXPECT_EQ(rig.allocator.stats().allocated_bytes, 0u);
    rig.allocator.reset_peaks();
    EXPECT_EQ(rig.allocator.stats().peak_allocated_bytes, 0u);
}

TEST(BlockAllocator, ThreadsOnOneStreamTakeSmallBlocksFromPoolsOfTheirOwn) {
    if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one hardware thread: one pool per stream";
    AllocatorRig rig;
    keel_stream s = rig.device.make_stream();
    Block* mine = rig.alloc(s, 64 * KiB);
    Block* theirs = nullptr;
    Block* again = nullptr;
    std::promise<void> allocated, freed;
    std::thread other([&] {
        theirs = rig.alloc(s, 64 * KiB);
        allocated.set_value();
        freed.get_future().wait();
        again = rig.alloc(s, 64 * KiB);
    });
    allocated.get_future().wait();
    ASSERT_NE(theirs, nullptr);
    // Two small segments: the other thread did not carve its block from
    // this thread's segment, whose lock and trees it would have shared.
    EXPECT_EQ(rig.allocator.stats().segment_count, 2u);
    EXPECT_EQ(BlockAllocator::stream(theirs), s);
    // A block freed here goes back to the other thread's pool, which
    // reuses it.
    const keel_device_addr theirs_addr = AllocatorRig::addr(theirs);
    rig.allocator.free(theirs, {});
    rig.allocator.free(mine, {});
    freed.set_value();
    other.join();
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(AllocatorRig::addr(again), theirs_addr);
    EXPECT_EQ(rig.allocator.stats().raw_allocations, 2u);
    rig.allocator.free(again, {});
    EXPECT_EQ(rig.allocator.stats().allocated_bytes, 0u);
}

TEST(BlockAllocator, InvalidRequestsAreRejectedWithClearErrors) {
    AllocatorRig rig;
    keel_stream s1 = rig.device.make_stream();
    auto zero = rig.allocator.allocate(s1, 0);
    ASSERT_FALSE(zero.ok());
    EXPECT_EQ(zero.error().code(), KEEL_STATUS_INVALID_ARGUMENT);
    auto null_stream = rig.allocator.allocate(nullptr, 16);
    ASSERT_FALSE(null_stream.ok());
    EXPECT_NE(null_stream.error().message().find("stream is null"), std::string::npos);
}

AllocatorConfig checked(std::uint64_t quarantine = 0) {
    AllocatorConfig config;
    config.checked = true;
    config.quarantine_bytes = quarantine;
    return config;
}

bool mentions(const Result<void>& r, const std::string& what) {
    return !r.ok() && r.error().message().find(what) != std::string::npos;
}

TEST(BlockAllocator, CheckedModeRefusesARangeOneBytePastItsBuffer) {
    AllocatorRig rig({}, checked());
    keel_stream s = rig.device.make_stream();
    Block* a = rig.alloc(s, 1000);
    Block* b = rig.alloc(s, 1000);
    const keel_device_addr at = AllocatorRig::addr(a);
    EXPECT_TRUE(rig.allocator.check_view("copy", "the destination", at, 1000).ok());
    EXPECT_TRUE(rig.allocator.check_view("copy", "the destination", at + 999, 1).ok());
    const Result<void> past = rig.allocator.check_view("copy", "the destination", at, 1001);
    ASSERT_FALSE(past.ok());
    EXPECT_EQ(past.error().code(), KEEL_STATUS_OUT_OF_RANGE);
    EXPECT_TRUE(mentions(past, "runs 1 byte(s) past the end")) << past.error().message();
    // The rounding slack and the guard belong to nobody.
    EXPECT_TRUE(mentions(rig.allocator.check_view("copy", "the source", at + 1000, 1), "starts past the end"));
    EXPECT_GE(BlockAllocator::size(a), 1000u + CheckedBlocks::kGuardBytes);
    // Memory the allocator does not own is left to the plugin.
    EXPECT_TRUE(rig.allocator.check_view("copy", "the source", 1, 8).ok());
    rig.allocator.free(a, {});
    rig.allocator.free(b, {});
}

TEST(BlockAllocator, CheckedModeRefusesAStaleViewAndQuarantinesTheBlock) {
    AllocatorRig rig({}, checked(1 * MiB));
    keel_stream s = rig.device.make_stream();
    Block* a = rig.alloc(s, 4096);
    const keel_device_addr at = AllocatorRig::addr(a);
    rig.allocator.free(a, {});
    const Result<void> stale = rig.allocator.check_view("memset", "the destination", at, 16);
    EXPECT_TRUE(mentions(stale, "use after free")) << (stale.ok() ? "accepted" : stale.error().message());
    Block* b = rig.alloc(s, 4096);
    EXPECT_NE(AllocatorRig::addr(b), at);  // quarantined, not handed out again
    EXPECT_TRUE(rig.allocator.check_view("memset", "the destination", AllocatorRig::addr(b), 4096).ok());
    rig.allocator.free(b, {});
}

TEST(BlockAllocator, WithoutCachingEveryBufferIsAPluginAllocationFreedAfterItsWork) {
    AllocatorConfig config;
    config.caching = false;
    AllocatorRig rig({}, config);
    keel_stream s1 = rig.device.make_stream();
    keel_stream s2 = rig.device.make_stream();
    Block* a = rig.alloc(s1, 4096);
    Block* b = rig.alloc(s1, 4096);
    EXPECT_EQ(rig.allocator.stats().raw_allocations, 2u);
    std::vector<RecordedUse> uses;
    rig.device.enqueue_access(s2, AllocatorRig::addr(a), 4096);
    ASSERT_TRUE(rig.allocator.record_use(a, s2, uses).ok());
    rig.device.enqueue_work(s1);
    rig.allocator.free(a, std::move(uses));  // waits for s1 and the use (the host wait runs them), then frees
    EXPECT_EQ(rig.device.unfinished(s1), 0u);
    EXPECT_EQ(rig.device.unfinished(s2), 0u);
    rig.allocator.free(b, {});
    const AllocatorStats st = rig.allocator.stats();
    EXPECT_EQ(st.raw_frees, 2u);
    EXPECT_EQ(st.reserved_bytes, 0u);
    EXPECT_TRUE(rig.device.violations().empty()) << rig.device.violations().front();
}

TEST(BlockAllocator, ManyThreadsAllocateFreeAndRecordConcurrently) {
    FakeDevice::Options device;
    device.immediate = true;
    AllocatorRig rig(device, {}, {}, std::chrono::microseconds{100});
    constexpr int kThreads = 4;
    std::vector<keel_stream> streams;
    for (int i = 0; i < kThreads; ++i) streams.push_back(rig.device.make_stream());
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            std::mt19937 rng(t);
            std::vector<Block*> live;
            for (int i = 0; i < 2000; ++i) {
                if (live.size() < 8 && rng() % 2 == 0) {
                    const std::uint64_t size = 1 + rng() % (3 * MiB);
                    auto r = rig.allocator.allocate(streams[t], size);
                    if (!r.ok()) { ++failures; continue; }
                    live.push_back(*r);
                } else if (!live.empty()) {
                    Block* b = live.back();
                    live.pop_back();
                    std::vector<RecordedUse> uses;
                    if (rng() % 4 == 0 &&
                        !rig.allocator.record_use(b, streams[(t + 1) % kThreads], uses).ok())
                        ++failures;
                    rig.allocator.free(b, std::move(uses));
                }
            }
            for (Block* b : live) rig.allocator.free(b, {});
        });
    }
    for (auto& th : threads) th.join();
    rig.tracker.drain();
    EXPECT_EQ(failures.load(), 0);
    const AllocatorStats st = rig.allocator.stats();
    EXPECT_EQ(st.allocated_bytes, 0u);
    EXPECT_EQ(st.allocated_count, 0u);
    EXPECT_EQ(st.pending_free_count, 0u);
    EXPECT_EQ(st.cached_bytes, st.reserved_bytes);
    EXPECT_TRUE(rig.device.violations().empty());
}

}  // namespace
}  // namespace keel::memory
