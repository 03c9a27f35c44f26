// Error paths: empty (moved-from) handles, sizes that do not fit,
// allocations larger than the device, memory of another device. Every
// refused call enqueues nothing.
#include "conformance.hpp"

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace keel::conformance {
namespace {

TEST_P(Conformance, AMovedFromStreamRefusesEveryCall) {
    KEEL_RULE(0, "handle.runtime-checks");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 64));
    KEEL_ASSERT_OK_AND_ASSIGN(Event e, Event::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Fence f, s.fence());
    Stream moved = std::move(s);
    EXPECT_TRUE(s.empty());
    std::vector<std::uint8_t> host(64);
    KEEL_EXPECT_ERROR(s.synchronize(), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.query(), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.copy(buf, host), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.copy(host, buf), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.copy_to_vector<std::uint8_t>(buf), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.memset(buf, 1), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.wait(e), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.wait(f), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.fence(), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.order_after(moved), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(moved.order_after(s), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(Buffer::allocate(s, 64), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(buf.record_stream(s), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.memory(), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(e.record(s), KEEL_STATUS_INVALID_ARGUMENT);
    auto r = s.synchronize();
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("moved-from"), std::string::npos) << r.error().message();
    KEEL_EXPECT_OK(s.close());  // closing an empty stream does nothing
    KEEL_EXPECT_OK(moved.synchronize());
}

TEST_P(Conformance, AMovedFromDeviceMemoryStillRefersToItsInstance) {
    KEEL_RULE(0, "handle.runtime-checks");
    // Like Device, a MemoryPool handle has no empty state: moving copies.
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device()));
    MemoryPool moved = std::move(memory);
    MemoryPool assigned = moved;
    assigned = std::move(moved);
    for (const MemoryPool* m : {&memory, &moved, &assigned}) {  // NOLINT(bugprone-use-after-move): the point
        EXPECT_EQ(*m, assigned);
        EXPECT_EQ(m->device(), device());
        EXPECT_EQ(m->stats().allocated_bytes, 0u);
        m->sweep();
        KEEL_EXPECT_OK(m->release_cached());
        KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(*m));
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, 64));
        KEEL_EXPECT_OK(s.memset(b, 1));
        KEEL_EXPECT_OK(s.synchronize());
    }
}

TEST_P(Conformance, AMovedFromEventRefusesEveryCall) {
    KEEL_RULE(0, "handle.runtime-checks");
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
    KEEL_RULE(0, "handle.runtime-checks");
    KEEL_ASSERT_OK_AND_ASSIGN(PinnedBuffer pinned, PinnedBuffer::allocate(device(), 64));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 64));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer other, Buffer::allocate(s, 64));
    Buffer moved = std::move(buf);
    EXPECT_TRUE(buf.empty());
    EXPECT_EQ(buf.size(), 0u);
    EXPECT_TRUE(buf.view().empty());
    std::vector<std::uint8_t> host(64);
    KEEL_EXPECT_ERROR(s.copy(buf, host), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.copy(host, buf), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.copy(other, buf), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.memset(buf, 0), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(buf.view(0, 1), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(buf.record_stream(s), KEEL_STATUS_INVALID_ARGUMENT);

    KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer raw, RawBuffer::allocate(device(), 64));
    RawBuffer raw_moved = std::move(raw);
    EXPECT_TRUE(raw.empty());
    KEEL_EXPECT_ERROR(s.copy(raw, host), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(raw.view(0, 1), KEEL_STATUS_INVALID_ARGUMENT);

    PinnedBuffer pinned_moved = std::move(pinned);
    EXPECT_TRUE(pinned.empty());
    KEEL_EXPECT_ERROR(s.copy(moved, pinned), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.copy(pinned, moved), KEEL_STATUS_INVALID_ARGUMENT);
}

TEST_P(Conformance, FreeingARawBufferTwiceIsHarmless) {
    KEEL_RULE(0, "handle.runtime-checks");
    KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer buf, RawBuffer::allocate(device(), 64));
    KEEL_EXPECT_OK(buf.free());
    EXPECT_TRUE(buf.empty());
    KEEL_EXPECT_OK(buf.free());
}

TEST_P(Conformance, ResettingABufferTwiceIsHarmless) {
    KEEL_RULE(0, "handle.runtime-checks");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 64));
    buf.reset();
    EXPECT_TRUE(buf.empty());
    buf.reset();
    EXPECT_EQ(buf.capacity(), 0u);
}

TEST_P(Conformance, AnAllocationLargerThanTheDeviceIsOutOfMemory) {
    KEEL_RULE(0, "memory.alloc");
    const std::uint64_t total = device().properties().total_memory;
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    for (std::uint64_t size : {total + 1, std::numeric_limits<std::uint64_t>::max()}) {
        auto raw = RawBuffer::allocate(device(), size);
        ASSERT_FALSE(raw.ok()) << size;
        EXPECT_EQ(raw.error().code(), KEEL_STATUS_OUT_OF_MEMORY) << raw.error().message();
        EXPECT_NE(raw.error().message().find(device().name()), std::string::npos) << raw.error().message();
        auto cached = Buffer::allocate(s, size);
        ASSERT_FALSE(cached.ok()) << size;
        EXPECT_EQ(cached.error().code(), KEEL_STATUS_OUT_OF_MEMORY) << cached.error().message();
        EXPECT_NE(cached.error().message().find(device().name()), std::string::npos)
            << cached.error().message();
    }
    KEEL_EXPECT_OK(RawBuffer::allocate(device(), 1));  // the device is still usable
    KEEL_EXPECT_OK(Buffer::allocate(s, 1));
}

TEST_P(Conformance, APinnedBufferLargerThanTheHostIsOutOfMemory) {
    KEEL_RULE(0, "memory.alloc");
    // Sizes near 2^64 wrap in an allocator that rounds them up; none may
    // come back as a buffer claiming that size.
    const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    for (std::uint64_t size : {max, max - 100, std::uint64_t{1} << 62}) {
        auto pinned = PinnedBuffer::allocate(device(), size);
        ASSERT_FALSE(pinned.ok()) << size << " bytes: a buffer of " << pinned->size() << " bytes";
        EXPECT_EQ(pinned.error().code(), KEEL_STATUS_OUT_OF_MEMORY) << pinned.error().message();
        EXPECT_NE(pinned.error().message().find(device().name()), std::string::npos) << pinned.error().message();
    }
    KEEL_EXPECT_OK(PinnedBuffer::allocate(device(), 1));  // the device is still usable
}

TEST_P(Conformance, AMemoryConfigWhoseSizesWouldWrapIsInvalid) {
    KEEL_RULE(0, "handle.runtime-checks");
    // These sizes are rounded up (to a power of two or to the rounding
    // quantum): near 2^64 that wraps, so they are refused by name.
    const std::vector<std::pair<const char*, std::function<void(MemoryConfig&)>>> fields = {
        {"allocator.rounding", [](MemoryConfig& c) { c.allocator.rounding = ~std::uint64_t{0}; }},
        {"allocator.small_size_limit", [](MemoryConfig& c) { c.allocator.small_size_limit = ~std::uint64_t{0}; }},
        {"allocator.small_segment_size", [](MemoryConfig& c) { c.allocator.small_segment_size = ~std::uint64_t{0}; }},
        {"allocator.large_segment_size", [](MemoryConfig& c) { c.allocator.large_segment_size = ~std::uint64_t{0}; }},
        {"allocator.large_rounding", [](MemoryConfig& c) { c.allocator.large_rounding = ~std::uint64_t{0}; }},
        {"staging.chunk_bytes", [](MemoryConfig& c) { c.staging.chunk_bytes = ~std::uint64_t{0}; }},
    };
    for (const auto& [name, set] : fields) {
        MemoryConfig config;
        set(config);
        for (auto made : {MemoryPool::create(device(), config), MemoryPool::shared(device(), config)}) {
            ASSERT_FALSE(made.ok()) << name;
            EXPECT_EQ(made.error().code(), KEEL_STATUS_INVALID_ARGUMENT) << made.error().message();
            EXPECT_NE(made.error().message().find(name), std::string::npos) << made.error().message();
        }
    }
    KEEL_EXPECT_OK(MemoryPool::shared(device()));  // a refused configuration is not remembered
}

TEST_P(Conformance, AZeroByteAllocationIsInvalid) {
    KEEL_RULE(0, "memory.alloc");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_EXPECT_ERROR(Buffer::allocate(s, 0), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(RawBuffer::allocate(device(), 0), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(PinnedBuffer::allocate(device(), 0), KEEL_STATUS_INVALID_ARGUMENT);
}

TEST_P(Conformance, CopiesThatDoNotFitAreOutOfRangeAndEnqueueNothing) {
    KEEL_RULE(0, "handle.runtime-checks");
    KEEL_ASSERT_OK_AND_ASSIGN(PinnedBuffer pinned_small, PinnedBuffer::allocate(device(), 100));
    KEEL_ASSERT_OK_AND_ASSIGN(PinnedBuffer pinned_big, PinnedBuffer::allocate(device(), 200));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer small, Buffer::allocate(s, 100));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer big, Buffer::allocate(s, 200));
    KEEL_ASSERT_OK(s.memset(small, 0));
    std::vector<std::uint8_t> host(200, 0xff), host_small(99, 0xff);
    KEEL_EXPECT_ERROR(s.copy(small, host), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_ERROR(s.copy(small, std::vector<std::uint8_t>(101, 0xff)), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_ERROR(s.copy(host_small, small), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_ERROR(s.copy(small, big), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_ERROR(s.copy(small, pinned_big), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_ERROR(s.copy(pinned_small, big), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_ERROR(small.view(90, 20), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_ERROR(small.view(101, 0), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_EXPECT_ERROR(small.view(std::numeric_limits<std::uint64_t>::max(), 2), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView part, small.view(50, 50));
    KEEL_EXPECT_ERROR(part.sub(10, 41), KEEL_STATUS_OUT_OF_RANGE);
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView three, small.view(0, 3));
    KEEL_EXPECT_ERROR(s.copy_to_vector<std::uint16_t>(three), KEEL_STATUS_INVALID_ARGUMENT);

    auto r = s.copy(small, host);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("200 bytes does not fit the destination of 100 bytes"), std::string::npos)
        << r.error().message();

    KEEL_ASSERT_OK_AND_ASSIGN(Bytes out, read_bytes(s, small));
    EXPECT_EQ(out, std::vector<std::uint8_t>(100, 0)) << "nothing was copied";
}

TEST_P(Conformance, NullHostRangesWithASizeAreInvalid) {
    KEEL_RULE(0, "handle.runtime-checks");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 64));
    const std::uint8_t* src = nullptr;
    std::uint8_t* dst = nullptr;
    KEEL_EXPECT_ERROR(s.copy(buf, std::span(src, 64)), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.copy(std::span(dst, 64), buf), KEEL_STATUS_INVALID_ARGUMENT);
}

TEST_P(Conformance, OverlappingDeviceToDeviceCopiesAreInvalid) {
    KEEL_RULE(0, "copy.d2d");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 256));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView a, buf.view(0, 128));
    KEEL_ASSERT_OK_AND_ASSIGN(DeviceView b, buf.view(64, 128));
    KEEL_EXPECT_ERROR(s.copy(b, a), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.copy(a, b), KEEL_STATUS_INVALID_ARGUMENT);
}

TEST_P(Conformance, MemoryOfAnotherDeviceIsRejected) {
    KEEL_RULE(0, "handle.runtime-checks");
    const Device* other = other_device();
    if (other == nullptr) GTEST_SKIP() << "needs a second device";
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream theirs_stream, Stream::create(*other));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer mine, Buffer::allocate(s, 64));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer theirs, Buffer::allocate(theirs_stream, 64));
    std::vector<std::uint8_t> host(64);
    auto r = s.copy(theirs, host);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(r.error().message().find(other->name()), std::string::npos) << r.error().message();
    KEEL_EXPECT_ERROR(s.copy(host, theirs), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(s.memset(theirs, 0), KEEL_STATUS_INVALID_ARGUMENT);
    // Across devices the runtime takes the other device's memory itself
    // (since 1.6: a peer or staged copy, waits natively or bridged): the
    // plugin is never handed it.
    KEEL_ASSERT_OK(theirs_stream.memset(theirs, 0x5A));
    KEEL_ASSERT_OK(s.order_after(theirs_stream));
    KEEL_EXPECT_OK(s.copy(mine, theirs));
    KEEL_EXPECT_OK(theirs.record_stream(s));
    KEEL_ASSERT_OK_AND_ASSIGN(Fence foreign, theirs_stream.fence());
    KEEL_EXPECT_OK(s.wait(foreign));
    KEEL_ASSERT_OK_AND_ASSIGN(Bytes got, read_bytes(s, mine));
    EXPECT_EQ(got, Bytes(64, 0x5A));
}

}  // namespace
}  // namespace keel::conformance
