// How buffers and fences keep their core alive without a shared counter per
// buffer or fence: each pool counts its blocks (and fences) out, the core
// goes with the last of its handles, blocks and fences, whichever goes last,
// on any thread, exactly once.
#include "fake_device.hpp"

#include "memory/buffer.hpp"
#include "memory/fence.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace keel::memory {
namespace {

using testing::FakeDevice;
using testing::quiet_config;

TEST(Ownership, BuffersOfSeveralPoolsKeepTheCoreUntilTheLastOneIsFreed) {
    FakeDevice device;
    keel_stream s1 = device.make_stream();
    keel_stream s2 = device.make_stream();
    std::vector<Buffer> buffers;
    {
        auto core = MemoryCore::create(device, quiet_config());
        for (keel_stream s : {s1, s2, s1})
            buffers.push_back(allocate(core, s, 4096).value());
        (void)allocate(core, s2, 4096).value();  // freed at once: its pool still holds s2's other buffer
    }
    device.complete_all();
    buffers.erase(buffers.begin());  // s1's pool still has one out
    buffers.erase(buffers.begin());  // s2's pool lets go
    EXPECT_EQ(device.counters().device_frees, 0u) << "the core went while a buffer of it was out";
    EXPECT_GT(device.counters().live_device_bytes, 0u);
    buffers.clear();  // the last one: the core goes and returns both segments
    EXPECT_EQ(device.counters().live_device_bytes, 0u);
    EXPECT_EQ(device.counters().events_live, 0u);
    EXPECT_TRUE(device.violations().empty());
}

TEST(Ownership, ACoreWhoseHandlesWentIsSharedAgainThroughItsLifetime) {
    // The device registry's path: a core kept only by a buffer is found
    // through lifetime() and gets handles again, with its pools and
    // statistics, and then goes with its last handle or buffer.
    FakeDevice device;
    keel_stream s = device.make_stream();
    auto core = MemoryCore::create(device, quiet_config());
    std::weak_ptr<MemoryCore> lifetime = core->lifetime();
    Buffer first = allocate(core, s, 4096).value();
    core.reset();
    std::shared_ptr<MemoryCore> kept = lifetime.lock();
    ASSERT_TRUE(kept) << "gone while `first` was out";
    std::shared_ptr<MemoryCore> again = MemoryCore::share(kept);
    EXPECT_EQ(again->allocator().stats().allocated_count, 1u) << "not the same instance";
    {
        std::shared_ptr<MemoryCore> joined = MemoryCore::share(kept);
        EXPECT_EQ(again.use_count(), 2) << "a second handle group while one lives";
    }
    kept.reset();
    Buffer second = allocate(again, s, 4096).value();
    EXPECT_EQ(again->allocator().stats().raw_allocations, 1u) << "the segment was not reused";
    first.reset();
    again.reset();
    EXPECT_FALSE(lifetime.expired()) << "gone while `second` was out";
    device.complete_all();
    second.reset();
    EXPECT_TRUE(lifetime.expired());
    EXPECT_EQ(device.counters().live_device_bytes, 0u);
    EXPECT_TRUE(device.violations().empty());
}

TEST(Ownership, ThreadsFreeingTheirBuffersWhileTheLastHandleGoesReleaseTheCoreOnce) {
    // Run under TSan (label concurrency): every thread frees into its own
    // pools while the handle goes, so whichever free or handle is last
    // destroys the core, after every other free left its pool.
    constexpr int kThreads = 4;
    constexpr int kRounds = 5;
    FakeDevice device;
    std::vector<keel_stream> streams;
    for (int t = 0; t < kThreads; ++t) streams.push_back(device.make_stream());
    for (int round = 0; round < kRounds; ++round) {
        auto core = MemoryCore::create(device, quiet_config());
        std::weak_ptr<MemoryCore> lifetime = core->lifetime();
        std::vector<std::vector<Buffer>> held(kThreads);
        for (int t = 0; t < kThreads; ++t)
            for (int i = 0; i < 8; ++i)
                held[static_cast<std::size_t>(t)].push_back(
                    allocate(core, streams[static_cast<std::size_t>(t % 2)], 4096 * (1 + i % 3)).value());
        device.complete_all();
        std::atomic<int> started{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t)
            threads.emplace_back([&, t] {
                std::vector<Buffer> mine = std::move(held[static_cast<std::size_t>(t)]);
                ++started;
                while (started.load() < kThreads + 1) std::this_thread::yield();
                while (!mine.empty()) mine.pop_back();
            });
        while (started.load() < kThreads) std::this_thread::yield();
        ++started;
        core.reset();
        for (auto& th : threads) th.join();
        EXPECT_TRUE(lifetime.expired()) << "round " << round;
        EXPECT_EQ(device.counters().live_device_bytes, 0u) << "round " << round;
    }
    EXPECT_TRUE(device.violations().empty());
}

TEST(Ownership, FencesKeepTheCoreLikeBuffersWhicheverThreadDropsThem) {
    // Run under TSan (label concurrency): fences taken on threads of their
    // own (each counted in its thread's pool), the last handle gone, then
    // every fence dropped on another thread than its own at once.
    constexpr int kThreads = 4;
    FakeDevice device;
    std::vector<keel_stream> streams;
    for (int t = 0; t < kThreads; ++t) streams.push_back(device.make_stream());
    auto core = MemoryCore::create(device, quiet_config());
    std::weak_ptr<MemoryCore> lifetime = core->lifetime();
    std::vector<std::vector<Fence>> fences(kThreads);
    {
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t)
            threads.emplace_back([&, t] {
                for (int i = 0; i < 8; ++i)
                    fences[static_cast<std::size_t>(t)].push_back(
                        record_fence(core, streams[static_cast<std::size_t>(t)]).value());
            });
        for (auto& th : threads) th.join();
    }
    core.reset();
    device.complete_all();
    EXPECT_FALSE(lifetime.expired()) << "gone while fences were out";
    std::atomic<int> started{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            std::vector<Fence> theirs = std::move(fences[static_cast<std::size_t>((t + 1) % kThreads)]);
            ++started;
            while (started.load() < kThreads) std::this_thread::yield();
            while (!theirs.empty()) theirs.pop_back();
        });
    for (auto& th : threads) th.join();
    EXPECT_TRUE(lifetime.expired()) << "the last fence did not release the core";
    EXPECT_EQ(device.counters().events_live, 0u);
    EXPECT_TRUE(device.violations().empty());
}

}  // namespace
}  // namespace keel::memory
