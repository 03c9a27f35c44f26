// Copies in every direction (from containers through staging, moved-in
// vectors, pinned buffers, device to device), views, memset, and what the
// device says about its memory.
#include "conformance.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <thread>
#include <vector>

namespace keel::conformance {
namespace {

TEST_P(Conformance, CopiesRoundTripHostToDeviceToDeviceToHost) {
    KEEL_RULE(0, "copy.h2d-source");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    for (std::size_t n : {std::size_t{1}, std::size_t{4099}, std::size_t{1} << 20}) {
        SCOPED_TRACE(n);
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer a, Buffer::allocate(s, n));
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, n));
        const Bytes in = pattern(n, 3);
        KEEL_ASSERT_OK(s.copy(a, in));
        KEEL_ASSERT_OK(s.copy(b, a));
        KEEL_ASSERT_OK_AND_ASSIGN(Bytes out, read_bytes(s, b));
        EXPECT_EQ(out, in);
    }
}

TEST_P(Conformance, AMovedInVectorIsReadFromPageableMemoryWhenTheCopyRuns) {
    KEEL_RULE(0, "copy.h2d-source");
    // The plugin reads the vector's own (pageable) storage, later: the
    // enqueue must not block on it, and the bytes must still arrive.
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    const std::size_t n = (1 << 20) + 17;
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, n));
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(s));
    KEEL_ASSERT_OK(s.copy(buf, pattern(n, 5)));  // a temporary: moved in
    gate.open();
    KEEL_ASSERT_OK_AND_ASSIGN(Bytes out, read_bytes(s, buf));
    EXPECT_EQ(out, pattern(n, 5));
}

TEST_P(Conformance, LargePageableCopiesArriveWholeInBothDirections) {
    KEEL_RULE(0, "copy.h2d-source");
    // Several of a plugin's staging chunks (4 MiB by default) and a ragged
    // tail, queued behind a held stream so that every chunk is staged when
    // the stream runs, not at enqueue.
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    const std::size_t n = (13u << 20) + 5;
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, n));
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(s));
    KEEL_ASSERT_OK(s.copy(buf, pattern(n, 9)));  // moved in: read when the copy runs
    Bytes out(n, 0);
    KEEL_ASSERT_OK_AND_ASSIGN(HostCopy back, s.copy(std::span<std::uint8_t>(out), buf));
    gate.open();
    KEEL_ASSERT_OK(back.wait());
    EXPECT_TRUE(out == pattern(n, 9));
}

// Skips a check of the optional device_pageable_staging_stats where the
// plugin has none (UNIMPLEMENTED; any other error fails).
#define KEEL_SKIP_UNLESS_PAGEABLE_STAGING_STATS()                                                         \
    if (auto stats = device().pageable_staging_stats(); !stats.ok()) {                                    \
        ASSERT_EQ(stats.error().code(), KEEL_STATUS_UNIMPLEMENTED) << stats.error().message();            \
        GTEST_SKIP() << device().name() << " reports no pageable staging: " << stats.error().message();  \
    }

TEST_P(Conformance, PageableCopiesAllocateNoPinnedMemoryOnceWarm) {
    KEEL_RULE(2, "staging.stats");
    KEEL_SKIP_UNLESS_PAGEABLE_STAGING_STATS();
    // Both directions, through the plugin's staging (a moved-in vector and a
    // vector destination are pageable), several chunks each.
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    const std::size_t n = (9u << 20) + 3;
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, n));
    Bytes out(n, 0);
    auto round_trip = [&](std::uint8_t seed) {
        KEEL_ASSERT_OK(s.copy(buf, pattern(n, seed)));
        KEEL_ASSERT_OK_AND_ASSIGN(HostCopy back, s.copy(std::span<std::uint8_t>(out), buf));
        KEEL_ASSERT_OK(back.wait());
        EXPECT_TRUE(out == pattern(n, seed));
    };
    round_trip(1);  // warms the plugin's pinned blocks
    KEEL_ASSERT_OK(s.synchronize());
    KEEL_ASSERT_OK_AND_ASSIGN(PageableStagingStats warm, device().pageable_staging_stats());
    for (std::uint8_t seed = 2; seed < 6; ++seed) round_trip(seed);
    KEEL_ASSERT_OK(s.synchronize());
    KEEL_ASSERT_OK_AND_ASSIGN(PageableStagingStats after, device().pageable_staging_stats());
    SCOPED_TRACE(after.to_string());
    EXPECT_EQ(after.copies - warm.copies, 8u) << "every copy is staged";
    EXPECT_EQ(after.pinned_allocations, warm.pinned_allocations) << "warm copies reuse the blocks";
    EXPECT_GE(after.block_reuses - warm.block_reuses, 8u);
    EXPECT_LE(after.held_bytes, after.capacity_bytes);
    EXPECT_GE(after.host_copy_threads, 1u);
}

TEST_P(Conformance, AStagedCopysBlocksAreBackWhenItsStreamsSynchronisationReturns) {
    KEEL_RULE(3, "staging.blocks-back");
    KEEL_SKIP_UNLESS_PAGEABLE_STAGING_STATS();
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    const std::size_t n = (9u << 20) + 3;
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, n));
    Bytes out(n, 0);
    for (std::uint8_t seed = 1; seed < 4; ++seed) {
        KEEL_ASSERT_OK(s.copy(buf, pattern(n, seed)));  // moved in: staged by the plugin
        KEEL_ASSERT_OK_AND_ASSIGN(HostCopy back, s.copy(std::span<std::uint8_t>(out), buf));
        KEEL_ASSERT_OK(s.synchronize());
        KEEL_ASSERT_OK_AND_ASSIGN(PageableStagingStats now, device().pageable_staging_stats());
        EXPECT_EQ(now.lent_bytes, 0u) << "after synchronize, seed " << int{seed} << ": " << now.to_string();
        KEEL_ASSERT_OK(back.wait());
        EXPECT_TRUE(out == pattern(n, seed));
    }
}

TEST_P(Conformance, AStagedCopysSourceMayBeReusedAtOnce) {
    KEEL_RULE(0, "copy.borrowed-container");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    for (std::size_t n : {std::size_t{8}, std::size_t{3000}, std::size_t{3} << 20}) {
        SCOPED_TRACE(n);
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, n));
        Bytes scratch = pattern(n, 7);
        const Bytes first = scratch;
        Gate gate;
        KEEL_ASSERT_OK(gate.hold(s));
        KEEL_ASSERT_OK(s.copy(buf, scratch));
        std::fill(scratch.begin(), scratch.end(), 0xcd);  // reused before the copy runs
        gate.open();
        KEEL_ASSERT_OK_AND_ASSIGN(Bytes out, read_bytes(s, buf));
        EXPECT_EQ(out, first);
    }
}

TEST_P(Conformance, CopiesRoundTripThroughPinnedBuffers) {
    KEEL_RULE(0, "memory.host-alloc");
    constexpr std::size_t n = 256 * 1024 + 5;
    KEEL_ASSERT_OK_AND_ASSIGN(PinnedBuffer in, PinnedBuffer::allocate(device(), n));
    KEEL_ASSERT_OK_AND_ASSIGN(PinnedBuffer out, PinnedBuffer::allocate(device(), n));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer dev, Buffer::allocate(s, n));
    EXPECT_EQ(in.size(), n);
    if (device().has(DeviceCapability::pinned_memory)) {
        EXPECT_TRUE(in.is_pinned());
    }
    Bytes expected = pattern(n, 9);
    std::copy(expected.begin(), expected.end(), in.as<std::uint8_t>().begin());
    std::fill(out.as<std::uint8_t>().begin(), out.as<std::uint8_t>().end(), 0);
    KEEL_ASSERT_OK(s.copy(dev, in));
    KEEL_ASSERT_OK(s.copy(out, dev));
    KEEL_ASSERT_OK(s.synchronize());
    auto got = out.as<std::uint8_t>();
    EXPECT_TRUE(std::equal(got.begin(), got.end(), expected.begin()));
}

TEST_P(Conformance, ADeviceToHostCopyIsDeliveredByItsWait) {
    KEEL_RULE(0, "copy.d2h-destination");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 3000));
    KEEL_ASSERT_OK(s.copy(buf, pattern(3000, 11)));
    std::vector<std::uint8_t> out(4000, 0x77);
    KEEL_ASSERT_OK_AND_ASSIGN(HostCopy copy, s.copy(out, buf));
    KEEL_ASSERT_OK(copy.wait());
    EXPECT_TRUE(std::equal(out.begin(), out.begin() + 3000, pattern(3000, 11).begin()));
    EXPECT_EQ(out[3000], 0x77) << "only the source's 3000 bytes are written";
    KEEL_ASSERT_OK(copy.wait());  // later waits return at once
}

// The device writes a device -> host copy's destination when the copy runs
// (a plugin whose device cannot reach pageable memory stages it then), so
// dropping the HostCopy waits for it, like dropping std::async's future.
TEST_P(Conformance, DroppingAHostCopyWaitsUntilTheDeviceWroteItsDestination) {
    KEEL_RULE(0, "copy.d2h-destination");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    const std::size_t n = (1 << 20) + 3;
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, n));
    const Bytes expected = pattern(n, 17);
    KEEL_ASSERT_OK(s.copy(buf, expected));
    auto out = std::make_unique<Bytes>(n, 0);
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(s));  // the copy cannot run before the gate opens
    std::optional<HostCopy> copy;
    KEEL_ASSERT_OK_AND_ASSIGN(copy, s.copy(*out, buf));
    {
        std::jthread opener([&gate] {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            gate.open();
        });
        copy.reset();  // blocks until the gate opened and the copy ran
        EXPECT_EQ(*out, expected);
    }
    out.reset();  // a copy still to run would now write freed memory
    KEEL_ASSERT_OK(s.synchronize());
}

TEST_P(Conformance, DroppingACopyToVectorFutureNeverBlocks) {
    KEEL_RULE(0, "enqueue.never-blocks");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 1 << 20));
    KEEL_ASSERT_OK(s.memset(buf, 0x42));
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(s));
    {
        KEEL_ASSERT_OK_AND_ASSIGN(auto future, s.copy_to_vector<std::uint8_t>(buf));
    }  // returns with the stream held; the vector goes once the copy ran
    EXPECT_FALSE(gate.timed_out());
    gate.open();
    KEEL_ASSERT_OK(s.synchronize());
}

TEST_P(Conformance, StagedCopiesAcceptAnyViewOfTheDeviceNotOnlyCachedBuffers) {
    KEEL_RULE(0, "memory.device-addr");
    // Raw memory is freed at once, not stream-ordered: made before the
    // stream, it outlives the stream's work even when an ASSERT returns early.
    KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer raw, RawBuffer::allocate(device(), 5000));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView tail, raw.view(1000, 4000));
    KEEL_ASSERT_OK(s.copy(raw, Bytes(5000, 0)));
    KEEL_ASSERT_OK(s.copy(tail, pattern(4000, 13)));
    KEEL_ASSERT_OK_AND_ASSIGN(Bytes out, read_bytes(s, raw));
    EXPECT_EQ(Bytes(out.begin(), out.begin() + 1000), Bytes(1000, 0));
    EXPECT_EQ(Bytes(out.begin() + 1000, out.end()), pattern(4000, 13));
}

TEST_P(Conformance, CopiesThroughSubViewsTouchOnlyTheirRange) {
    KEEL_RULE(0, "memory.device-addr");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 1024));
    KEEL_ASSERT_OK(s.memset(buf, 0));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView middle, buf.view(100, 200));
    EXPECT_EQ(middle.address(), buf.address() + 100);
    EXPECT_EQ(middle.size(), 200u);
    KEEL_ASSERT_OK(s.copy(middle, Bytes(200, 0xff)));
    KEEL_ASSERT_OK_AND_ASSIGN(Bytes out, read_bytes(s, buf));
    for (std::size_t i = 0; i < out.size(); ++i)
        ASSERT_EQ(out[i], (i >= 100 && i < 300) ? 0xff : 0x00) << "byte " << i;
}

TEST_P(Conformance, DeviceToDeviceCopyBetweenPartsOfOneBuffer) {
    KEEL_RULE(0, "copy.d2d");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 2048));
    const Bytes in = pattern(1024, 1);
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView low, buf.view(0, 1024));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView high, buf.view(1024, 1024));
    KEEL_ASSERT_OK(s.copy(low, in));
    KEEL_ASSERT_OK(s.copy(high, low));
    KEEL_ASSERT_OK_AND_ASSIGN(Bytes out, read_bytes(s, high));
    EXPECT_EQ(out, in);
}

TEST_P(Conformance, MemsetFillsEveryByteOfItsView) {
    KEEL_RULE(0, "copy.memset");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 5000));
    KEEL_ASSERT_OK(s.memset(buf, 0x00));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView tail, buf.view(4000, 1000));
    KEEL_ASSERT_OK(s.memset(tail, 0x5a));
    KEEL_ASSERT_OK_AND_ASSIGN(Bytes out, read_bytes(s, buf));
    for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], i < 4000 ? 0x00 : 0x5a) << i;
}

TEST_P(Conformance, ATinyCopyCapturesItsSourceAtTheCall) {
    KEEL_RULE(0, "copy.inline");
    // Up to KEEL_INLINE_COPY_MAX bytes take the plugin's memcpy_h2d_inline
    // when it has one (else staging): either way the source may be reused
    // at once, even while the stream is held back.
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(memory));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 2 * KEEL_INLINE_COPY_MAX));
    Bytes scratch = pattern(KEEL_INLINE_COPY_MAX, 5);
    const Bytes first = scratch;
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(s));
    KEEL_ASSERT_OK(s.copy(buf, scratch));
    std::fill(scratch.begin(), scratch.end(), 0xcd);
    gate.open();
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView head, buf.view(0, KEEL_INLINE_COPY_MAX));
    KEEL_ASSERT_OK_AND_ASSIGN(Bytes out, read_bytes(s, head));
    EXPECT_EQ(out, first);
    EXPECT_LE(memory.staging_stats().inline_copies, 1u);
}

TEST_P(Conformance, AZeroByteCopyEnqueuesNothingAndSucceeds) {
    KEEL_RULE(1, "edge.zero-bytes");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 16));
    const std::uint8_t* none = nullptr;
    KEEL_EXPECT_OK(s.copy(buf, std::span(none, 0)));
    KEEL_EXPECT_OK(s.copy(buf, Bytes{}));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView empty, buf.view(0, 0));
    std::uint8_t* nowhere = nullptr;
    KEEL_ASSERT_OK_AND_ASSIGN(HostCopy copy, s.copy(std::span(nowhere, 0), empty));
    KEEL_EXPECT_OK(copy.wait());
    KEEL_EXPECT_OK(s.synchronize());
}

TEST_P(Conformance, PropertiesAreSaneAndAllocationsAreAligned) {
    KEEL_RULE(0, "memory.alloc");
    const DeviceProperties& p = device().properties();
    EXPECT_FALSE(p.name.empty());
    EXPECT_FALSE(p.vendor.empty());
    EXPECT_GT(p.total_memory, 0u);
    EXPECT_GT(p.max_allocation, 0u);
    EXPECT_LE(p.max_allocation, p.total_memory);
    ASSERT_GT(p.alloc_alignment, 0u);
    EXPECT_EQ(p.alloc_alignment & (p.alloc_alignment - 1), 0u) << "a power of two";
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    for (std::uint64_t size : {1ull, 100ull, 4096ull, 1ull << 20}) {
        KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer r, RawBuffer::allocate(device(), size));
        EXPECT_EQ(r.size(), size);
        EXPECT_EQ(r.address() % p.alloc_alignment, 0u) << size;
        EXPECT_EQ(r.device(), device());
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, size));
        EXPECT_EQ(b.size(), size);
        EXPECT_GE(b.capacity(), size);
        EXPECT_EQ(b.address() % p.alloc_alignment, 0u) << size;
        EXPECT_TRUE(b.view().on(device()));
    }
}

TEST_P(Conformance, MemoryInfoIsConsistentWithTheProperties) {
    KEEL_RULE(0, "memory.info");
    auto info = device().memory_info();
    if (!info.ok() && info.error().code() == KEEL_STATUS_UNIMPLEMENTED)
        GTEST_SKIP() << device().name() << " has no device_memory_info (optional entry)";
    ASSERT_TRUE(info.ok()) << info.error().message();
    EXPECT_EQ(info->total_bytes, device().properties().total_memory);
    EXPECT_LE(info->free_bytes, info->total_bytes);
}

}  // namespace
}  // namespace keel::conformance
