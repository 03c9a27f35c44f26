// PinnedBlocks: classes, reuse, the capacity and idle bounds, trim, and
// blocks retired after a failed enqueue.
#include "fake_stream.hpp"

#include <gtest/gtest.h>

namespace keel::staging {
namespace {

using testing::HeapPinned;

struct BlocksRig {
    explicit BlocksRig(PinnedBlocksConfig config)
        : counts(std::make_shared<HeapPinned::Counts>()), blocks(std::make_unique<HeapPinned>(counts), config) {}
    std::size_t live() {
        std::lock_guard lock(counts->mu);
        return counts->live.size();
    }
    PinnedBlock lend(std::size_t n) {
        auto r = blocks.lend(n);
        EXPECT_TRUE(r.ok() && r->has_value());
        return r.ok() && r->has_value() ? **r : PinnedBlock{};
    }
    std::shared_ptr<HeapPinned::Counts> counts;
    PinnedBlocks blocks;
};

PinnedBlocksConfig config(std::uint64_t capacity, std::uint64_t max_idle = UINT64_MAX) {
    return PinnedBlocksConfig{.smallest = 4096, .largest = 1 << 20, .capacity = capacity, .max_idle_bytes = max_idle};
}

TEST(PinnedBlocks, SizesRoundUpToPowersOfTwoAndIdleBlocksAreReused) {
    BlocksRig rig(config(64 << 20));
    EXPECT_EQ(rig.blocks.block_size(1), 4096u);
    EXPECT_EQ(rig.blocks.block_size(4097), 8192u);
    EXPECT_EQ(rig.blocks.block_size(1 << 20), 1u << 20);
    PinnedBlock a = rig.lend(5000);
    EXPECT_EQ(a.size, 8192u);
    rig.blocks.give_back(a);
    PinnedBlock b = rig.lend(8000);
    EXPECT_EQ(b.data, a.data);
    rig.blocks.give_back(b);
    EXPECT_EQ(rig.blocks.stats().allocations, 1u);
    EXPECT_EQ(rig.blocks.stats().reuses, 1u);
    EXPECT_EQ(rig.blocks.stats().idle_bytes, 8192u);
}

TEST(PinnedBlocks, ARequestAboveTheLargestBlockIsAnErrorNotAShortBlock) {
    BlocksRig rig(config(64 << 20));
    auto r = rig.blocks.lend((1 << 20) + 1);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_FALSE(rig.blocks.take_idle((1 << 20) + 1).has_value());
}

TEST(PinnedBlocks, TheCapacityBoundsHeldBytesAndTheIdleBoundFreesTheRest) {
    BlocksRig rig(config(3 * 4096, /*max_idle=*/4096));
    PinnedBlock a = rig.lend(4096), b = rig.lend(4096), c = rig.lend(4096);
    auto refused = rig.blocks.lend(1);
    ASSERT_TRUE(refused.ok());
    EXPECT_FALSE(refused->has_value());
    rig.blocks.give_back(a);
    rig.blocks.give_back(b);  // past the idle bound: freed
    EXPECT_EQ(rig.live(), 2u);
    EXPECT_EQ(rig.blocks.stats().frees, 1u);
    rig.blocks.give_back(c);
    EXPECT_EQ(rig.live(), 1u);
    rig.blocks.trim();
    EXPECT_EQ(rig.live(), 0u);
    const auto s = rig.blocks.stats();
    EXPECT_EQ(s.held_bytes, 0u);
    EXPECT_EQ(s.idle_bytes, 0u);
    EXPECT_EQ(s.frees, 3u);
}

TEST(PinnedBlocks, RetiredBlocksAreNeverLentAgainAndFreedAtRelease) {
    BlocksRig rig(config(64 << 20));
    PinnedBlock a = rig.lend(4096);
    rig.blocks.retire(a);
    PinnedBlock b = rig.lend(4096);
    EXPECT_NE(b.data, a.data);
    rig.blocks.give_back(b);
    EXPECT_EQ(rig.live(), 2u);
    rig.blocks.release_all();
    EXPECT_EQ(rig.live(), 0u);
    EXPECT_EQ(rig.blocks.stats().held_bytes, 0u);
}

}  // namespace
}  // namespace keel::staging
