// Holds, fences and the per-stream queue bound on the deterministic fake.
#include "fake_device.hpp"

#include "memory/buffer.hpp"
#include "memory/fence.hpp"
#include "memory/hold.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

namespace keel::memory {
namespace {

using testing::FakeDevice;
using testing::quiet_config;


struct HoldRig {
    explicit HoldRig(MemoryConfig config = quiet_config()) : core(MemoryCore::create(device, config)) {}
    ~HoldRig() { device.complete_all(); }
    FakeDevice device;
    std::shared_ptr<MemoryCore> core;
};

// Sets a flag when destroyed; move-only like most held objects.
class Tracked {
public:
    explicit Tracked(std::shared_ptr<std::atomic<int>> dead) : dead_(std::move(dead)) {}
    Tracked(const Tracked&) = delete;
    Tracked& operator=(const Tracked&) = delete;
    Tracked(Tracked&& other) noexcept = default;
    Tracked& operator=(Tracked&&) noexcept = default;
    ~Tracked() {
        if (dead_) ++*dead_;
    }

private:
    std::shared_ptr<std::atomic<int>> dead_;
};

TEST(Hold, KeepsAnObjectAliveUntilTheStreamReachesThePoint) {
    HoldRig rig;
    keel_stream s = rig.device.make_stream();
    auto dead = std::make_shared<std::atomic<int>>(0);
    rig.device.enqueue_work(s);  // work before the hold point
    ASSERT_TRUE(hold(*rig.core, s, Tracked(dead)).ok());
    rig.device.enqueue_work(s);  // work after it
    rig.core->tracker().sweep();
    EXPECT_EQ(dead->load(), 0);
    rig.device.complete(s, 1);
    rig.core->tracker().sweep();
    EXPECT_EQ(dead->load(), 1);  // released although later work is unfinished
    EXPECT_EQ(rig.device.counters().host_syncs, 0u);
}

TEST(Hold, AFailingEventQueryNeverReleasesEarlyAndAWaitStillReleases) {
    FakeDevice::Options options;
    options.failing_event_query = true;
    FakeDevice device(options);
    auto core = MemoryCore::create(device, quiet_config());
    keel_stream s = device.make_stream();
    auto dead = std::make_shared<std::atomic<int>>(0);
    ASSERT_TRUE(hold(*core, s, Tracked(dead)).ok());
    device.enqueue_work(s);
    core->tracker().sweep();
    EXPECT_EQ(dead->load(), 0) << "a failed query was taken for completion";
    // A blocking wait (here the drain) sees the point reached and releases.
    core->tracker().drain();
    EXPECT_EQ(dead->load(), 1);
    EXPECT_TRUE(device.violations().empty());
    device.complete_all();
}

TEST(Hold, ReleasesAreBatchedAndEventsArePooled) {
    HoldRig rig;
    keel_stream s = rig.device.make_stream();
    auto dead = std::make_shared<std::atomic<int>>(0);
    for (int round = 0; round < 10; ++round) {
        for (int i = 0; i < 50; ++i) ASSERT_TRUE(hold(*rig.core, s, Tracked(dead)).ok());
        rig.device.complete(s);
        rig.core->tracker().sweep();  // one sweep releases all fifty
        EXPECT_EQ(dead->load(), 50 * (round + 1));
    }
    EXPECT_EQ(rig.core->tracker().stats().events_created, 50u);
    EXPECT_EQ(rig.core->tracker().outstanding(), 0u);
}

TEST(Hold, AcceptsSeveralObjectsAndSharedHandlesWithOneEvent) {
    HoldRig rig;
    keel_stream s = rig.device.make_stream();
    auto dead = std::make_shared<std::atomic<int>>(0);
    auto shared = std::make_shared<Tracked>(dead);
    ASSERT_TRUE(hold(*rig.core, s, Tracked(dead), shared).ok());
    shared.reset();  // the hold keeps the last reference
    EXPECT_EQ(dead->load(), 0);
    EXPECT_EQ(rig.device.counters().event_records, 1u);
    rig.device.complete(s);
    rig.core->tracker().sweep();
    EXPECT_EQ(dead->load(), 2);
}

TEST(Hold, ReclaimerThreadReleasesWithoutFurtherCalls) {
    MemoryConfig config;
    config.reclaim_interval = std::chrono::microseconds{200};
    HoldRig rig(config);
    keel_stream s = rig.device.make_stream();
    auto dead = std::make_shared<std::atomic<int>>(0);
    ASSERT_TRUE(hold(*rig.core, s, Tracked(dead)).ok());
    rig.device.complete(s);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (dead->load() == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(dead->load(), 1);
}

TEST(Hold, TwoStreamPipelinePassesBuffersWithHoldsAndNoHostSync) {
    // Producer fills a buffer on s1; a fence orders the consumer s2 after it;
    // s2 "sends" the buffer; the producer drops its handle at once and the
    // hold on s2 keeps the memory until the send finished. The fake flags
    // any reuse that races the send.
    HoldRig rig;
    keel_stream producer = rig.device.make_stream();
    keel_stream consumer = rig.device.make_stream();
    for (int step = 0; step < 50; ++step) {
        auto buf = allocate(rig.core, producer, 64 * KiB);
        ASSERT_TRUE(buf.ok());
        rig.device.enqueue_access(producer, buf->address(), 64 * KiB);   // produce
        ASSERT_TRUE(order_after(rig.core, consumer, producer).ok());
        rig.device.enqueue_access(consumer, buf->address(), 64 * KiB);   // send
        ASSERT_TRUE(record_use(*buf, consumer).ok());
        ASSERT_TRUE(hold(*rig.core, consumer, std::move(*buf)).ok());
        if (step % 3 == 0) rig.device.complete(producer);
        if (step % 4 == 0) rig.device.complete(consumer, 6);
    }
    rig.device.complete_all();
    rig.core->tracker().sweep();
    EXPECT_TRUE(rig.device.violations().empty()) << rig.device.violations().front();
    EXPECT_EQ(rig.device.counters().host_syncs, 0u);
    EXPECT_EQ(rig.core->allocator().stats().allocated_count, 0u);
    // Memory is reused: 50 buffers of 64 KiB fit in two 2 MiB segments.
    EXPECT_LE(rig.core->allocator().stats().raw_allocations, 2u);
}

TEST(Hold, ABufferKeepsItsCoreAliveAfterEveryOtherReference) {
    FakeDevice device;
    keel_stream s = device.make_stream();
    Buffer buf;
    {
        auto core = MemoryCore::create(device, quiet_config());
        auto b = allocate(core, s, 4096);
        ASSERT_TRUE(b.ok());
        buf = std::move(b).value();
    }  // the last reference but the buffer's
    EXPECT_EQ(device.counters().device_frees, 0u);
    device.enqueue_access(s, buf.address(), 4096);  // still valid memory
    device.complete_all();
    buf.reset();  // frees into its core, which then goes and returns its segment
    EXPECT_EQ(device.counters().live_device_bytes, 0u);
    EXPECT_TRUE(device.violations().empty());
}

// A core whose last owner is a buffer held on a new stream of `device`,
// released by the reclaimer (every 200 µs) once the stream ran.
void leave_a_core_owned_only_by_its_held_buffer(FakeDevice& device) {
    keel_stream s = device.make_stream();
    MemoryConfig config;
    config.reclaim_interval = std::chrono::microseconds{200};
    auto core = MemoryCore::create(device, config);
    auto b = allocate(core, s, 4096);
    ASSERT_TRUE(b.ok());
    device.enqueue_access(s, b->address(), 4096);
    ASSERT_TRUE(hold(*core, s, std::move(b).value()).ok());
}

// The core went (its memory and events back to the device) within 20 s,
// without a hazard on the way.
void expect_core_destroyed_soon(FakeDevice& device) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while ((device.counters().live_device_bytes != 0 || device.counters().events_live != 0) &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(device.counters().live_device_bytes, 0u) << "the core was never destroyed";
    EXPECT_EQ(device.counters().events_live, 0u);
    EXPECT_TRUE(device.violations().empty());
}

TEST(Hold, AHeldBufferThatIsItsCoresLastOwnerIsReleasedByTheReclaimer) {
    // The core lives only inside its own tracker's release: the reclaimer
    // thread runs it, and the core must then be destroyed elsewhere (it
    // cannot join its reclaimer from inside it).
    static FakeDevice device;  // outlives the thread that destroys the core
    leave_a_core_owned_only_by_its_held_buffer(device);
    EXPECT_GT(device.counters().live_device_bytes, 0u);
    device.complete_all();
    expect_core_destroyed_soon(device);
}

TEST(Hold, AHeldLastOwnerIsReleasedByTheReclaimerWhenEveryQueryFails) {
    // A failed stream fails every query of its events: only a wait tells
    // that its work is over. Nobody else calls into the core (the held
    // buffer is its last owner), so the reclaimer must wait itself, or the
    // core, its thread and its plugin live for ever.
    FakeDevice::Options options;
    options.failing_event_query = true;
    static FakeDevice device(options);  // outlives the thread that destroys the core
    leave_a_core_owned_only_by_its_held_buffer(device);
    expect_core_destroyed_soon(device);
}

TEST(Fence, OrdersAnotherStreamOnTheDeviceWithoutHostWait) {
    HoldRig rig;
    keel_stream s1 = rig.device.make_stream();
    keel_stream s2 = rig.device.make_stream();
    auto buf = allocate(rig.core, s1, 4096);
    ASSERT_TRUE(buf.ok());
    rig.device.enqueue_access(s1, buf->address(), 4096);
    auto fence = record_fence(rig.core, s1);
    ASSERT_TRUE(fence.ok());
    ASSERT_TRUE(wait_fence(*fence, s2).ok());
    rig.device.enqueue_access(s2, buf->address(), 4096);
    EXPECT_TRUE(rig.device.violations().empty());
    EXPECT_EQ(rig.device.counters().host_syncs, 0u);
    rig.device.complete(s2);
    EXPECT_EQ(rig.device.unfinished(s2), 2u);  // held behind s1
    rig.device.complete(s1);
    rig.device.complete(s2);
    EXPECT_EQ(rig.device.unfinished(s2), 0u);
}

TEST(Fence, WithoutAFenceTheCheckerSeesTheRace) {
    HoldRig rig;
    keel_stream s1 = rig.device.make_stream();
    keel_stream s2 = rig.device.make_stream();
    auto buf = allocate(rig.core, s1, 4096);
    ASSERT_TRUE(buf.ok());
    rig.device.enqueue_access(s1, buf->address(), 4096);
    rig.device.enqueue_access(s2, buf->address(), 4096);
    EXPECT_FALSE(rig.device.violations().empty());
}

TEST(Fence, ItsEventIsRecycledOnlyAfterThePointIsReached) {
    HoldRig rig;
    keel_stream s1 = rig.device.make_stream();
    keel_stream s2 = rig.device.make_stream();
    rig.device.enqueue_work(s1);
    {
        auto fence = record_fence(rig.core, s1);
        ASSERT_TRUE(fence.ok());
        ASSERT_TRUE(wait_fence(*fence, s2).ok());
    }
    EXPECT_EQ(rig.core->tracker().outstanding(WorkKind::fence), 1u);
    rig.device.complete(s1);
    rig.core->tracker().sweep();
    EXPECT_EQ(rig.core->tracker().outstanding(WorkKind::fence), 0u);
    // The next fence reuses the event.
    auto again = record_fence(rig.core, s1);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(rig.core->tracker().stats().events_created, 1u);
}

TEST(Fence, OrderingAStreamAfterItselfIsANoOp) {
    HoldRig rig;
    keel_stream s1 = rig.device.make_stream();
    ASSERT_TRUE(order_after(rig.core, s1, s1).ok());
    EXPECT_EQ(rig.device.counters().stream_waits, 0u);
}

TEST(BackPressure, QueuedOperationsPerStreamAreBounded) {
    MemoryConfig config = quiet_config();
    config.limits.max_queued_per_stream = 4;
    HoldRig rig(config);
    keel_stream s = rig.device.make_stream();
    auto dead = std::make_shared<std::atomic<int>>(0);
    for (int i = 0; i < 20; ++i) {
        rig.device.enqueue_work(s);
        ASSERT_TRUE(hold(*rig.core, s, Tracked(dead)).ok());
        EXPECT_LE(rig.core->tracker().outstanding(), 4u);
    }
    // A wait drains the stream to half the bound: the host waits once per
    // two operations past it here, not once per operation (16 waits).
    EXPECT_GT(rig.core->tracker().stats().queue_waits, 0u);
    EXPECT_LE(rig.core->tracker().stats().queue_waits, 8u);
    EXPECT_GE(dead->load(), 16);
}

}  // namespace
}  // namespace keel::memory
