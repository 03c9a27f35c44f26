// The completion tracker's per-stream state: numbering across a stream that
// closes and a new one on the same handle, and many threads recording holds
// and fences on their own streams and on one (also under TSan).
#include "fake_device.hpp"

#include "memory/fence.hpp"
#include "memory/hold.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace keel::memory {
namespace {

using testing::FakeDevice;
using testing::quiet_config;

struct Rig {
    Rig() : core(MemoryCore::create(device, quiet_config())) {}
    ~Rig() { device.complete_all(); }
    FakeDevice device;
    std::shared_ptr<MemoryCore> core;
};

// Counts its destructions; move-only like most held objects.
class Counted {
public:
    explicit Counted(std::shared_ptr<std::atomic<int>> dead) : dead_(std::move(dead)) {}
    Counted(const Counted&) = delete;
    Counted& operator=(const Counted&) = delete;
    Counted(Counted&& other) noexcept = default;
    Counted& operator=(Counted&&) noexcept = default;
    ~Counted() {
        if (dead_) ++*dead_;
    }

private:
    std::shared_ptr<std::atomic<int>> dead_;
};

TEST(StreamQueues, ANewStreamOnAClosedStreamsHandleNumbersItsRecordsAboveTheOld) {
    Rig rig;
    CompletionTracker& tracker = rig.core->tracker();
    keel_stream s = rig.device.make_stream();
    // A point recorded on the first stream, kept (as a Fence keeps it) past its close.
    auto old_event = rig.core->events().acquire();
    ASSERT_TRUE(old_event.ok());
    ASSERT_TRUE(rig.core->ops().event_record(*old_event, s).ok());
    const std::uint64_t old_seq = tracker.next_seq(s);
    rig.device.complete(s);
    tracker.forget_stream(s);  // closed: its queue goes

    // A new stream on the handle holds an object over work not done yet.
    const std::uint64_t new_seq = tracker.next_seq(s);
    EXPECT_GT(new_seq, old_seq);
    rig.device.enqueue_work(s);
    auto dead = std::make_shared<std::atomic<int>>(0);
    ASSERT_TRUE(hold(*rig.core, s, Counted(dead)).ok());

    // The old point arrives late (a Fence dropped after the close); waiting
    // for it must not take the newer hold for complete.
    tracker.track(s, old_seq, *old_event, /*owns_event=*/true, WorkKind::fence, HostFunc{});
    EXPECT_TRUE(tracker.wait_oldest(WorkKind::fence, s));
    EXPECT_EQ(dead->load(), 0) << "released before the new stream reached the hold";
    EXPECT_EQ(tracker.outstanding(), 1u);
    rig.device.complete(s);
    tracker.sweep();
    EXPECT_EQ(dead->load(), 1);
    EXPECT_EQ(tracker.outstanding(), 0u);
    EXPECT_TRUE(tracker.idle());
}

TEST(StreamQueues, AThreadsCachedQueueOfAForgottenStreamIsNotUsed) {
    Rig rig;
    CompletionTracker& tracker = rig.core->tracker();
    keel_stream s = rig.device.make_stream();
    auto dead = std::make_shared<std::atomic<int>>(0);
    ASSERT_TRUE(hold(*rig.core, s, Counted(dead)).ok());  // caches s's queue on this thread
    rig.device.complete(s);
    tracker.forget_stream(s);
    EXPECT_EQ(dead->load(), 1);
    // Tracked again on the handle: it must land in the map's queue, where
    // sweeps find it, not in the forgotten one.
    rig.device.enqueue_work(s);
    ASSERT_TRUE(hold(*rig.core, s, Counted(dead)).ok());
    EXPECT_EQ(tracker.outstanding(), 1u);
    rig.device.complete(s);
    tracker.sweep();
    EXPECT_EQ(dead->load(), 2);
    EXPECT_TRUE(tracker.idle());
}

// Threads hold and fence, each on a stream of its own or all on one, while
// the device completes work: everything is released exactly once, and the
// pool's events are reused rather than made per operation.
void hold_and_fence_from_threads(bool one_stream) {
    Rig rig;
    constexpr int kThreads = 4;
    constexpr int kRounds = 200;
    constexpr int kPerRound = 8;
    std::vector<keel_stream> streams;
    for (int t = 0; t < (one_stream ? 1 : kThreads); ++t) streams.push_back(rig.device.make_stream());
    auto dead = std::make_shared<std::atomic<int>>(0);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            const keel_stream s = streams[one_stream ? 0 : static_cast<std::size_t>(t)];
            for (int round = 0; round < kRounds; ++round) {
                for (int i = 0; i < kPerRound; ++i) {
                    rig.device.enqueue_work(s);
                    if (!hold(*rig.core, s, Counted(dead)).ok()) ++failures;
                    auto fence = record_fence(rig.core, s);  // dropped at once: tracked
                    if (!fence.ok()) ++failures;
                }
                rig.device.complete(s);
                (void)rig.core->tracker().sweep();
            }
        });
    }
    for (auto& th : threads) th.join();
    rig.device.complete_all();
    rig.core->tracker().drain();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(dead->load(), kThreads * kRounds * kPerRound);
    EXPECT_EQ(rig.core->tracker().outstanding(), 0u);
    EXPECT_TRUE(rig.core->tracker().idle());
    // Two events per operation would be 12800: the shards hand them round.
    EXPECT_LT(rig.core->tracker().stats().events_created, 4096u);
}

TEST(StreamQueues, ThreadsHoldAndFenceOnStreamsOfTheirOwn) { hold_and_fence_from_threads(false); }

TEST(StreamQueues, ThreadsHoldAndFenceOnOneStream) { hold_and_fence_from_threads(true); }

}  // namespace
}  // namespace keel::memory
