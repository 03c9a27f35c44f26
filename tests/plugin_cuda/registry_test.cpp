// The CUDA plugin's host-only helpers, tested without a GPU: the
// allocation registry that checks every device range before it reaches
// CUDA, and the pool that recycles streams and events.
#include "allocation_registry.hpp"
#include "handle_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace keel::cuda {
namespace {

constexpr keel_device_addr kBase = 0x7f0000000000;

TEST(AllocationRegistry, AcceptsRangesInsideOneAllocationUpToItsLastByte) {
    AllocationRegistry r("device allocation of cuda:0");
    r.add(kBase, 1024);
    EXPECT_TRUE(r.check(kBase, 1024, "destination").ok());
    EXPECT_TRUE(r.check(kBase + 1000, 24, "destination").ok());
    EXPECT_TRUE(r.check(kBase + 1023, 1, "destination").ok());
    EXPECT_TRUE(r.contains(kBase + 512, 512));
    EXPECT_FALSE(r.contains(kBase + 512, 513));
}

TEST(AllocationRegistry, AFreedAllocationIsRefusedRightAfterASuccessfulCheck) {
    // A check that succeeded is remembered by the thread (the fast path of
    // every enqueue); removing the allocation must end that at once.
    AllocationRegistry r("device allocation of cuda:0");
    r.add(kBase, 1024);
    ASSERT_TRUE(r.check(kBase, 1024, "destination").ok());
    ASSERT_TRUE(r.contains(kBase, 16));
    ASSERT_TRUE(r.remove(kBase).ok());
    EXPECT_EQ(r.check(kBase, 1024, "destination").error().code(), KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_FALSE(r.contains(kBase, 16));
    // Re-added smaller at the same address (CUDA reuses addresses): the old size no longer holds.
    r.add(kBase, 256);
    EXPECT_EQ(r.check(kBase, 1024, "destination").error().code(), KEEL_STATUS_OUT_OF_RANGE);
    ASSERT_TRUE(r.check(kBase, 256, "destination").ok());
    r.add(kBase, 128);  // the same base again, now smaller
    EXPECT_EQ(r.check(kBase, 256, "destination").error().code(), KEEL_STATUS_OUT_OF_RANGE);
}

TEST(AllocationRegistry, ARemovalOnAnotherThreadEndsThisThreadsRememberedCheck) {
    AllocationRegistry r("device allocation of cuda:0");
    r.add(kBase, 1024);
    ASSERT_TRUE(r.check(kBase, 8, "destination").ok());
    std::thread([&] { ASSERT_TRUE(r.remove(kBase).ok()); }).join();
    EXPECT_FALSE(r.check(kBase, 8, "destination").ok());
}

TEST(AllocationRegistry, ARememberedCheckIsNotMistakenForAnotherRegistrys) {
    // A registry destroyed and another made at the same address (a plugin
    // shut down and initialised again) must not inherit its hits.
    alignas(AllocationRegistry) unsigned char storage[sizeof(AllocationRegistry)];
    auto* first = new (storage) AllocationRegistry("device allocation of cuda:0");
    first->add(kBase, 1024);
    ASSERT_TRUE(first->check(kBase, 8, "destination").ok());
    first->~AllocationRegistry();
    auto* second = new (storage) AllocationRegistry("device allocation of cuda:0");
    EXPECT_FALSE(second->check(kBase, 8, "destination").ok());
    second->~AllocationRegistry();
}

TEST(AllocationRegistry, ARangeRunningPastTheEndIsOutOfRangeAndSaysWhere) {
    AllocationRegistry r("device allocation of cuda:0");
    r.add(kBase, 1024);
    Result<void> past = r.check(kBase + 1000, 25, "destination");
    ASSERT_FALSE(past.ok());
    EXPECT_EQ(past.error().code(), KEEL_STATUS_OUT_OF_RANGE);
    EXPECT_EQ(past.error().message(),
              "destination 0x7f00000003e8 + 25 bytes runs past the end of its device allocation of cuda:0 "
              "(0x7f0000000000, 1024 bytes)");
    // A huge size must not wrap around.
    EXPECT_EQ(r.check(kBase + 8, ~uint64_t{0}, "source").error().code(), KEEL_STATUS_OUT_OF_RANGE);
}

TEST(AllocationRegistry, AnAddressOutsideEveryAllocationIsAnInvalidArgument) {
    AllocationRegistry r("device allocation of cuda:0");
    r.add(kBase, 1024);
    r.add(kBase + 4096, 1024);
    for (keel_device_addr addr : {keel_device_addr{0x1000}, kBase - 1, kBase + 1024, kBase + 4095, kBase + 5120}) {
        Result<void> res = r.check(addr, 1, "source");
        ASSERT_FALSE(res.ok()) << std::hex << addr;
        EXPECT_EQ(res.error().code(), KEEL_STATUS_INVALID_ARGUMENT);
        EXPECT_NE(res.error().message().find("is not a device allocation of cuda:0"), std::string::npos)
            << res.error().message();
        EXPECT_FALSE(r.contains(addr, 1));
    }
    AllocationRegistry empty("device allocation of cuda:0");
    EXPECT_FALSE(empty.check(kBase, 1, "source").ok());
    EXPECT_FALSE(empty.contains(kBase, 1));
}

TEST(AllocationRegistry, RemovesOnlyFromTheStartOfAnAllocationAndOnlyOnce) {
    AllocationRegistry r("device allocation of cuda:0");
    r.add(kBase, 1024);
    r.add(kBase + 2048, 64);
    EXPECT_EQ(r.remove(kBase + 8).error().code(), KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_TRUE(r.remove(kBase).ok());
    Result<void> twice = r.remove(kBase);
    ASSERT_FALSE(twice.ok());
    EXPECT_EQ(twice.error().message(), "0x7f0000000000 is not the start of a live device allocation of cuda:0");
    EXPECT_FALSE(r.contains(kBase, 1));
    EXPECT_TRUE(r.contains(kBase + 2048, 64)) << "the other allocation is untouched";
}

TEST(AllocationRegistry, KeepsManyAllocationsInAnyOrderAndGivesThemAllBack) {
    AllocationRegistry r("device allocation of cuda:0");
    std::vector<keel_device_addr> bases;
    for (int i = 0; i < 200; ++i) bases.push_back(kBase + static_cast<keel_device_addr>((i * 7919) % 200) * 0x10000);
    for (keel_device_addr b : bases) r.add(b, 0x8000);
    for (keel_device_addr b : bases) {
        EXPECT_TRUE(r.contains(b + 0x7fff, 1));
        EXPECT_FALSE(r.contains(b + 0x8000, 1));
    }
    auto all = r.take_all();
    EXPECT_EQ(all.size(), bases.size());
    EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
    EXPECT_FALSE(r.contains(bases[0], 1));
}

TEST(AllocationRegistry, MayBeCheckedFromManyThreadsWhileAnotherAddsAndRemoves) {
    AllocationRegistry r("device allocation of cuda:0");
    r.add(kBase, 4096);  // stays live throughout
    std::atomic<bool> stop{false};
    std::atomic<int> wrong{0};
    std::vector<std::thread> readers;
    for (int t = 0; t < 3; ++t)
        readers.emplace_back([&] {
            while (!stop.load())
                if (!r.check(kBase + 100, 100, "buffer").ok()) ++wrong;
        });
    for (int i = 0; i < 2000; ++i) {
        r.add(kBase + 0x100000 + i * 0x1000, 0x800);
        if (i % 2 == 1) {
            ASSERT_TRUE(r.remove(kBase + 0x100000 + (i - 1) * 0x1000).ok());
        }
    }
    stop = true;
    for (auto& th : readers) th.join();
    EXPECT_EQ(wrong.load(), 0);
}

TEST(HandlePool, HandsBackWhatItKeptUpToItsCapacity) {
    HandlePool<int> pool(2);
    EXPECT_FALSE(pool.take().has_value());
    EXPECT_TRUE(pool.give(1));
    EXPECT_TRUE(pool.give(2));
    EXPECT_FALSE(pool.give(3)) << "full: the caller keeps and destroys it";
    EXPECT_EQ(pool.take().value(), 2);
    EXPECT_EQ(pool.take_all(), std::vector<int>{1});
    EXPECT_FALSE(pool.take().has_value());
}

TEST(HandlePool, NeverHandsOneHandleToTwoThreads) {
    HandlePool<int> pool(1000);
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(pool.give(i));
    std::vector<std::vector<int>> taken(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            while (auto h = pool.take()) taken[t].push_back(*h);
        });
    for (auto& th : threads) th.join();
    std::vector<int> all;
    for (auto& v : taken) all.insert(all.end(), v.begin(), v.end());
    std::sort(all.begin(), all.end());
    ASSERT_EQ(all.size(), 1000u);
    for (int i = 0; i < 1000; ++i) EXPECT_EQ(all[i], i);
}

}  // namespace
}  // namespace keel::cuda
