// Copies in every direction (pageable and pinned host memory), views, memset,
// and what the device says about its memory.
#include "conformance.hpp"

#include <cstdint>
#include <numeric>
#include <vector>

namespace keel::conformance {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes pattern(std::size_t n, std::uint8_t seed) {
    Bytes b(n);
    for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(i * 31 + seed);
    return b;
}

TEST_P(Conformance, CopiesRoundTripHostToDeviceToDeviceToHost) {
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    for (std::size_t n : {std::size_t{1}, std::size_t{4099}, std::size_t{1} << 20}) {
        SCOPED_TRACE(n);
        KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer a, DeviceBuffer::allocate(device(), n));
        KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer b, DeviceBuffer::allocate(device(), n));
        Bytes in = pattern(n, 3), out(n, 0);
        KEEL_ASSERT_OK(s.copy_h2d(a, in.data(), n));
        KEEL_ASSERT_OK(s.copy_d2d(b, a));
        KEEL_ASSERT_OK(s.copy_d2h(out.data(), b, n));
        KEEL_ASSERT_OK(s.synchronize());
        EXPECT_EQ(out, in);
    }
}

TEST_P(Conformance, CopiesRoundTripThroughPinnedBuffers) {
    constexpr std::size_t n = 256 * 1024 + 5;
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(PinnedBuffer in, PinnedBuffer::allocate(device(), n));
    KEEL_ASSERT_OK_AND_ASSIGN(PinnedBuffer out, PinnedBuffer::allocate(device(), n));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer dev, DeviceBuffer::allocate(device(), n));
    EXPECT_EQ(in.size(), n);
    if (device().has(DeviceCapability::pinned_memory)) {
        EXPECT_TRUE(in.is_pinned());
    }
    Bytes expected = pattern(n, 9);
    std::copy(expected.begin(), expected.end(), in.as<std::uint8_t>().begin());
    std::fill(out.as<std::uint8_t>().begin(), out.as<std::uint8_t>().end(), 0);
    KEEL_ASSERT_OK(s.copy_h2d(dev, in));
    KEEL_ASSERT_OK(s.copy_d2h(out, dev));
    KEEL_ASSERT_OK(s.synchronize());
    auto got = out.as<std::uint8_t>();
    EXPECT_TRUE(std::equal(got.begin(), got.end(), expected.begin()));
}

TEST_P(Conformance, CopiesThroughSubViewsTouchOnlyTheirRange) {
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer buf, DeviceBuffer::allocate(device(), 1024));
    KEEL_ASSERT_OK(s.memset(buf, 0));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView middle, buf.view(100, 200));
    EXPECT_EQ(middle.address(), buf.address() + 100);
    EXPECT_EQ(middle.size(), 200u);
    Bytes ones(200, 0xff), out(1024, 0x77);
    KEEL_ASSERT_OK(s.copy_h2d(middle, ones.data(), ones.size()));
    KEEL_ASSERT_OK(s.copy_d2h(out.data(), buf, out.size()));
    KEEL_ASSERT_OK(s.synchronize());
    for (std::size_t i = 0; i < out.size(); ++i)
        ASSERT_EQ(out[i], (i >= 100 && i < 300) ? 0xff : 0x00) << "byte " << i;
}

TEST_P(Conformance, DeviceToDeviceCopyBetweenPartsOfOneBuffer) {
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer buf, DeviceBuffer::allocate(device(), 2048));
    Bytes in = pattern(1024, 1), out(1024, 0);
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView low, buf.view(0, 1024));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView high, buf.view(1024, 1024));
    KEEL_ASSERT_OK(s.copy_h2d(low, in.data(), in.size()));
    KEEL_ASSERT_OK(s.copy_d2d(high, low));
    KEEL_ASSERT_OK(s.copy_d2h(out.data(), high, out.size()));
    KEEL_ASSERT_OK(s.synchronize());
    EXPECT_EQ(out, in);
}

TEST_P(Conformance, MemsetFillsEveryByteOfItsView) {
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer buf, DeviceBuffer::allocate(device(), 5000));
    KEEL_ASSERT_OK(s.memset(buf, 0x00));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView tail, buf.view(4000, 1000));
    KEEL_ASSERT_OK(s.memset(tail, 0x5a));
    Bytes out(5000, 0x33);
    KEEL_ASSERT_OK(s.copy_d2h(out.data(), buf, out.size()));
    KEEL_ASSERT_OK(s.synchronize());
    for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], i < 4000 ? 0x00 : 0x5a) << i;
}

TEST_P(Conformance, AnInlineCopyCapturesItsSourceAtTheCall) {
    if (!device().supports_inline_copy())
        GTEST_SKIP() << device().name() << " has no memcpy_h2d_inline (optional entry)";
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer buf, DeviceBuffer::allocate(device(), 2 * KEEL_INLINE_COPY_MAX));
    Bytes scratch = pattern(KEEL_INLINE_COPY_MAX, 5), first = scratch, out(KEEL_INLINE_COPY_MAX, 0);
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(s));
    KEEL_ASSERT_OK(s.copy_h2d_inline(buf, scratch.data(), scratch.size()));
    std::fill(scratch.begin(), scratch.end(), 0xcd);  // reused at once: allowed for inline copies
    gate.open();
    KEEL_ASSERT_OK(s.copy_d2h(out.data(), buf, out.size()));
    KEEL_ASSERT_OK(s.synchronize());
    EXPECT_EQ(out, first);
    KEEL_EXPECT_ERROR(s.copy_h2d_inline(buf, scratch.data(), KEEL_INLINE_COPY_MAX + 1),
                      KEEL_STATUS_INVALID_ARGUMENT);
}

TEST_P(Conformance, AZeroByteCopyEnqueuesNothingAndSucceeds) {
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer buf, DeviceBuffer::allocate(device(), 16));
    KEEL_EXPECT_OK(s.copy_h2d(buf, nullptr, 0));
    KEEL_EXPECT_OK(s.copy_d2h(nullptr, buf, 0));
    KEEL_EXPECT_OK(s.synchronize());
}

TEST_P(Conformance, PropertiesAreSaneAndAllocationsAreAligned) {
    const DeviceProperties& p = device().properties();
    EXPECT_FALSE(p.name.empty());
    EXPECT_FALSE(p.vendor.empty());
    EXPECT_GT(p.total_memory, 0u);
    EXPECT_GT(p.max_allocation, 0u);
    EXPECT_LE(p.max_allocation, p.total_memory);
    ASSERT_GT(p.alloc_alignment, 0u);
    EXPECT_EQ(p.alloc_alignment & (p.alloc_alignment - 1), 0u) << "a power of two";
    for (std::uint64_t size : {1ull, 100ull, 4096ull, 1ull << 20}) {
        KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer b, DeviceBuffer::allocate(device(), size));
        EXPECT_EQ(b.size(), size);
        EXPECT_EQ(b.address() % p.alloc_alignment, 0u) << size;
        EXPECT_EQ(b.device(), device());
    }
}

TEST_P(Conformance, MemoryInfoIsConsistentWithTheProperties) {
    auto info = device().memory_info();
    if (!info.ok() && info.error().code() == KEEL_STATUS_UNIMPLEMENTED)
        GTEST_SKIP() << device().name() << " has no device_memory_info (optional entry)";
    ASSERT_TRUE(info.ok()) << info.error().message();
    EXPECT_EQ(info->total_bytes, device().properties().total_memory);
    EXPECT_LE(info->free_bytes, info->total_bytes);
}

}  // namespace
}  // namespace keel::conformance
