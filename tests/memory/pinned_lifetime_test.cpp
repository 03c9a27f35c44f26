// A PinnedBuffer's memory goes back only once the copies enqueued with it
// stopped running: a framework that drops its pinned buffers on an error
// path (a later call failed, so it never synchronised) must not free memory
// a queued copy still reads or writes. On level_zero:0 the fake driver
// aborts on such a free ("zeMemFree of memory a pending command still
// uses"); on cpu:0 the drop would return before the copy ran. Every device
// that loads is tried (cuda:0 where a GPU is); the stream is held by a gate,
// so the copies are still queued when the buffers go.
#include "device_fixture.hpp"

#include <keel/keel.hpp>
#include <keel/testing/gate.hpp>
#include <keel/testing/result.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

class PinnedLifetime : public keel::testing::EveryDevice {};

std::vector<std::uint32_t> pattern(std::size_t n) {
    std::vector<std::uint32_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = 0x9e3779b9u * static_cast<std::uint32_t>(i + 1);
    return v;
}

TEST_P(PinnedLifetime, DroppingPinnedBuffersWaitsForTheQueuedCopiesThatUseThem) {
    constexpr std::size_t kElements = 16384;
    const std::vector<std::uint32_t> want = pattern(kElements);
    KEEL_ASSERT_OK_AND_ASSIGN(keel::Stream stream, keel::Stream::create(*device_));
    KEEL_ASSERT_OK_AND_ASSIGN(keel::Buffer buf, keel::Buffer::allocate(stream, kElements * 4));
    std::optional<keel::PinnedBuffer> in, out;
    {
        KEEL_ASSERT_OK_AND_ASSIGN(keel::PinnedBuffer p, keel::PinnedBuffer::allocate(*device_, kElements * 4));
        in.emplace(std::move(p));
    }
    {
        KEEL_ASSERT_OK_AND_ASSIGN(keel::PinnedBuffer p, keel::PinnedBuffer::allocate(*device_, kElements * 4));
        out.emplace(std::move(p));
    }
    std::memcpy(in->data(), want.data(), kElements * 4);
    keel::testing::Gate gate;
    KEEL_ASSERT_OK(gate.hold(stream));
    KEEL_ASSERT_OK(stream.copy(buf, *in));   // reads `in` when it runs
    KEEL_ASSERT_OK(stream.copy(*out, buf));  // writes `out` when it runs
    // The error path: no synchronisation, the buffers simply go.
    std::atomic<bool> dropped{false};
    std::thread dropper([&] {
        in.reset();
        out.reset();
        dropped.store(true);
    });
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(dropped.load()) << "the pinned buffers were freed while copies that use them were queued";
    gate.open();
    dropper.join();
    EXPECT_TRUE(dropped.load());
    // The copy from `in` ran before its memory went: the buffer holds it.
    KEEL_ASSERT_OK_AND_ASSIGN(auto future, stream.copy_to_vector<std::uint32_t>(buf));
    KEEL_ASSERT_OK_AND_ASSIGN(std::vector<std::uint32_t> got, std::move(future).get());
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
}

TEST_P(PinnedLifetime, APinnedBufferReusedByStreamsThatComeAndGoKeepsFewPoints) {
    // A staging buffer used for ever by short-lived streams: the point after
    // each copy is given back once passed, not kept until the buffer goes
    // (which would take a new event from the pool per stream).
    KEEL_ASSERT_OK_AND_ASSIGN(keel::Stream first, keel::Stream::create(*device_));
    KEEL_ASSERT_OK_AND_ASSIGN(keel::MemoryPool memory, first.memory());
    KEEL_ASSERT_OK_AND_ASSIGN(keel::PinnedBuffer staging, keel::PinnedBuffer::allocate(*device_, 4096));
    std::memset(staging.data(), 7, 4096);
    const std::uint64_t events_before = memory.tracker_stats().events_created;
    for (int i = 0; i < 200; ++i) {
        KEEL_ASSERT_OK_AND_ASSIGN(keel::Stream s, keel::Stream::create(*device_));
        KEEL_ASSERT_OK_AND_ASSIGN(keel::Buffer b, keel::Buffer::allocate(s, 4096));
        KEEL_ASSERT_OK(s.copy(b, staging));
        KEEL_ASSERT_OK(s.synchronize());
    }
    EXPECT_LE(memory.tracker_stats().events_created - events_before, 16u)
        << "the points of streams long gone are still kept";
}

TEST_P(PinnedLifetime, PartsOfAPinnedBufferCopyInAndOutLikeSlotsOfAStagingRing) {
    constexpr std::size_t kSlot = 1024, kSlots = 4;
    KEEL_ASSERT_OK_AND_ASSIGN(keel::Stream stream, keel::Stream::create(*device_));
    KEEL_ASSERT_OK_AND_ASSIGN(keel::PinnedBuffer ring, keel::PinnedBuffer::allocate(*device_, kSlot * kSlots * 4));
    const std::vector<std::uint32_t> want = pattern(kSlot * kSlots);
    std::memcpy(ring.data(), want.data(), ring.size());
    KEEL_ASSERT_OK_AND_ASSIGN(keel::Buffer buf, keel::Buffer::allocate(stream, kSlot * 4));
    // Slot 2 in, then back out into slot 0.
    KEEL_ASSERT_OK(stream.copy(buf, ring, 2 * kSlot * 4));
    KEEL_ASSERT_OK(stream.copy(ring, 0, buf));
    KEEL_ASSERT_OK(stream.synchronize());
    const auto* got = static_cast<const std::uint32_t*>(ring.data());
    for (std::size_t i = 0; i < kSlot; ++i) ASSERT_EQ(got[i], want[2 * kSlot + i]) << "element " << i;
    for (std::size_t i = kSlot; i < kSlot * kSlots; ++i) ASSERT_EQ(got[i], want[i]) << "element " << i << " moved";
    // Past the end, either way: refused, nothing enqueued.
    KEEL_EXPECT_ERROR(stream.copy(buf, ring, 3 * kSlot * 4 + 4), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_ERROR(stream.copy(ring, 3 * kSlot * 4 + 4, buf), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_ERROR(stream.copy(buf, ring, ~std::uint64_t{0}), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_OK(stream.synchronize());
}

KEEL_ON_EVERY_DEVICE(PinnedLifetime);

}  // namespace
