// Error paths: empty (moved-from) handles, sizes that do not fit,
// allocations larger than the device, memory of another device.
#include "conformance.hpp"

#include <cstdint>
#include <limits>
#include <vector>

namespace keel::conformance {
namespace {

TEST_P(Conformance, AMovedFromStreamRefusesEveryCall) {
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer buf, DeviceBuffer::allocate(device(), 64));
    KEEL_ASSERT_OK_AND_ASSIGN(Event e, Event::create(device()));
    Stream moved = std::move(s);
    EXPECT_TRUE(s.empty());
    std::vector<std::uint8_t> host(64);
    KEEL_EXPECT_ERROR(s.synchronize(), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.query(), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.copy_h2d(buf, host.data(), 64), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.copy_d2h(host.data(), buf, 64), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.memset(buf, 1), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.wait(e), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(e.record(s), KEEL_STATUS_INVALID_ARGUMENT);
    auto r = s.synchronize();
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("moved-from"), std::string::npos) << r.error().message();
    KEEL_EXPECT_OK(s.close());  // closing an empty stream does nothing
    KEEL_EXPECT_OK(moved.synchronize());
}

TEST_P(Conformance, AMovedFromEventRefusesEveryCall) {
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event e, Event::create(device()));
    Event moved = std::move(e);
    EXPECT_TRUE(e.empty());
    KEEL_EXPECT_ERROR(e.record(s), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(e.query(), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(e.synchronize(), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.wait(e), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(Event::elapsed_ms(e, moved), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_OK(moved.record(s));
}

TEST_P(Conformance, AMovedFromBufferIsAnEmptyViewThatCopiesRefuse) {
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer buf, DeviceBuffer::allocate(device(), 64));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer other, DeviceBuffer::allocate(device(), 64));
    DeviceBuffer moved = std::move(buf);
    EXPECT_TRUE(buf.empty());
    EXPECT_EQ(buf.size(), 0u);
    EXPECT_TRUE(buf.view().empty());
    std::vector<std::uint8_t> host(64);
    KEEL_EXPECT_ERROR(s.copy_h2d(buf, host.data(), 64), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.copy_d2h(host.data(), buf, 64), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.copy_d2d(other, buf), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.memset(buf, 0), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(buf.view(0, 1), KEEL_STATUS_INVALID_ARGUMENT);

    KEEL_ASSERT_OK_AND_ASSIGN(PinnedBuffer pinned, PinnedBuffer::allocate(device(), 64));
    PinnedBuffer pinned_moved = std::move(pinned);
    EXPECT_TRUE(pinned.empty());
    KEEL_EXPECT_ERROR(s.copy_h2d(moved, pinned), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.copy_d2h(pinned, moved), KEEL_STATUS_INVALID_ARGUMENT);
}

TEST_P(Conformance, FreeingABufferTwiceIsHarmless) {
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer buf, DeviceBuffer::allocate(device(), 64));
    KEEL_EXPECT_OK(buf.free());
    EXPECT_TRUE(buf.empty());
    KEEL_EXPECT_OK(buf.free());
}

TEST_P(Conformance, AnAllocationLargerThanTheDeviceIsOutOfMemory) {
    const std::uint64_t total = device().properties().total_memory;
    for (std::uint64_t size : {total + 1, std::numeric_limits<std::uint64_t>::max()}) {
        auto buf = DeviceBuffer::allocate(device(), size);
        ASSERT_FALSE(buf.ok()) << size;
        EXPECT_EQ(buf.error().code(), KEEL_STATUS_OUT_OF_MEMORY) << buf.error().message();
        EXPECT_NE(buf.error().message().find(device().name()), std::string::npos)
            << buf.error().message();
    }
    KEEL_EXPECT_OK(DeviceBuffer::allocate(device(), 1));  // the device is still usable
}

TEST_P(Conformance, AZeroByteAllocationIsInvalid) {
    KEEL_EXPECT_ERROR(DeviceBuffer::allocate(device(), 0), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(PinnedBuffer::allocate(device(), 0), KEEL_STATUS_INVALID_ARGUMENT);
}

TEST_P(Conformance, CopiesThatDoNotFitAreOutOfRangeAndEnqueueNothing) {
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer small, DeviceBuffer::allocate(device(), 100));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer big, DeviceBuffer::allocate(device(), 200));
    KEEL_ASSERT_OK_AND_ASSIGN(PinnedBuffer pinned_small, PinnedBuffer::allocate(device(), 100));
    KEEL_ASSERT_OK_AND_ASSIGN(PinnedBuffer pinned_big, PinnedBuffer::allocate(device(), 200));
    KEEL_ASSERT_OK(s.memset(small, 0));
    std::vector<std::uint8_t> host(200, 0xff);
    KEEL_EXPECT_ERROR(s.copy_h2d(small, host.data(), 101), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_ERROR(s.copy_d2h(host.data(), small, 101), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_ERROR(s.copy_d2d(small, big), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_ERROR(s.copy_h2d(small, pinned_big), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_ERROR(s.copy_d2h(pinned_small, big), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_ERROR(small.view(90, 20), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_ERROR(small.view(101, 0), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_ERROR(small.view(std::numeric_limits<std::uint64_t>::max(), 2), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView part, small.view(50, 50));
    KEEL_EXPECT_ERROR(part.sub(10, 41), KEEL_STATUS_OUT_OF_RANGE);

    auto r = s.copy_h2d(small, host.data(), 101);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("101 bytes does not fit the destination of 100 bytes"),
              std::string::npos)
        << r.error().message();

    std::vector<std::uint8_t> out(100, 0x77);
    KEEL_ASSERT_OK(s.copy_d2h(out.data(), small, 100));
    KEEL_ASSERT_OK(s.synchronize());
    EXPECT_EQ(out, std::vector<std::uint8_t>(100, 0)) << "nothing was copied";
}

TEST_P(Conformance, NullHostPointersAreInvalid) {
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer buf, DeviceBuffer::allocate(device(), 64));
    KEEL_EXPECT_ERROR(s.copy_h2d(buf, nullptr, 64), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.copy_d2h(nullptr, buf, 64), KEEL_STATUS_INVALID_ARGUMENT);
}

TEST_P(Conformance, OverlappingDeviceToDeviceCopiesAreInvalid) {
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer buf, DeviceBuffer::allocate(device(), 256));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView a, buf.view(0, 128));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView b, buf.view(64, 128));
    KEEL_EXPECT_ERROR(s.copy_d2d(b, a), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.copy_d2d(a, b), KEEL_STATUS_INVALID_ARGUMENT);
}

TEST_P(Conformance, MemoryOfAnotherDeviceIsRejected) {
    const Device* other = other_device();
    if (other == nullptr) GTEST_SKIP() << "needs a second device";
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer mine, DeviceBuffer::allocate(device(), 64));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceBuffer theirs, DeviceBuffer::allocate(*other, 64));
    std::vector<std::uint8_t> host(64);
    auto r = s.copy_h2d(theirs, host.data(), 64);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(r.error().message().find(other->name()), std::string::npos) << r.error().message();
    KEEL_EXPECT_ERROR(s.copy_d2d(mine, theirs), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.memset(theirs, 0), KEEL_STATUS_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace keel::conformance
