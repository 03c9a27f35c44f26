// What a caching allocator tells the checker through stream_annotate_range
// (keel.h 1.3; RELEASED / ACQUIRED): a stale view
// of a freed block is a use after free, and a block reused on another
// stream without ordering is a race, even though the plugin never sees the
// block's device_free. Planted bugs and clean twins under every schedule.
#include "checked_session.hpp"

namespace keel::cpu::testing {
namespace {

constexpr uint64_t kSegment = 64 * 1024;
constexpr uint64_t kBlock = 4096;

// The allocator side: one segment from device_alloc, blocks carved from it.
class Allocator {
public:
    explicit Allocator(CheckedSession& t) : t_(t), segment_(t.alloc(kSegment)) {}
    keel_device_addr block(int i) const { return segment_ + kBlock * static_cast<uint64_t>(i); }
    std::optional<CError> release(keel_stream s, keel_device_addr b) { return annotate(s, KEEL_RANGE_RELEASED, b); }
    std::optional<CError> acquire(keel_stream s, keel_device_addr b) { return annotate(s, KEEL_RANGE_ACQUIRED, b); }

private:
    std::optional<CError> annotate(keel_stream s, keel_range_annotation what, keel_device_addr b) {
        return take(t_.api().stream_annotate_range(s, what, b, kBlock));
    }
    CheckedSession& t_;
    keel_device_addr segment_;
};

TEST(CheckerAllocator, AStaleViewOfAReleasedBlockIsAUseAfterFree) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream s = t.stream();
        Allocator a(t);
        ASSERT_FALSE(a.acquire(s, a.block(1)));
        ASSERT_FALSE(t.fill(s, a.block(1), kBlock, 1.0f));
        ASSERT_FALSE(a.release(s, a.block(1)));  // the buffer was freed; the block is cached
        // The bug: a view kept past the buffer's lifetime, used on the same stream.
        expect_finding(take(t.api().memset_d8(s, a.block(1) + 16, 0, 16)), KEEL_STATUS_OUT_OF_RANGE,
                       {"use after free: memset_d8 #2 on stream 1 writes", "(bytes 4112..4128 of device allocation #1",
                        "its allocator released (on stream 1): a stale view of a freed buffer"});
    }
}

TEST(CheckerAllocator, TheBlocksNewOwnerOnTheSameStreamIsClean) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream s = t.stream();
        Allocator a(t);
        ASSERT_FALSE(a.acquire(s, a.block(1)));
        ASSERT_FALSE(t.fill(s, a.block(1), kBlock, 1.0f));
        ASSERT_FALSE(a.release(s, a.block(1)));
        ASSERT_FALSE(a.acquire(s, a.block(1)));  // reused in stream order, as a caching allocator does
        ASSERT_FALSE(t.fill(s, a.block(1), kBlock, 2.0f));
        EXPECT_EQ(t.read_f32(s, a.block(1), kBlock / 4), std::vector<float>(kBlock / 4, 2.0f));
        EXPECT_TRUE(t.error_logs().empty());
    }
}

// Freed on one stream while another still reads it, and handed to a third
// owner there without an event (PyTorch's missing record_stream).
TEST(CheckerAllocator, ABlockReusedOnAnotherStreamWithoutOrderingIsARace) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream owner = t.stream(), reader = t.stream();
        Allocator a(t);
        keel_device_addr out = t.alloc(kBlock);
        keel_event ready = t.event();
        ASSERT_FALSE(a.acquire(owner, a.block(2)));
        ASSERT_FALSE(t.fill(owner, a.block(2), kBlock, 1.0f));
        KEEL_ASSERT_OK(t.api().event_record(ready, owner));
        KEEL_ASSERT_OK(t.api().stream_wait_event(reader, ready));
        KEEL_ASSERT_OK(t.api().memcpy_d2d(reader, out, a.block(2), kBlock));  // the other stream reads it
        ASSERT_FALSE(a.release(owner, a.block(2)));
        ASSERT_FALSE(a.acquire(owner, a.block(2)));
        expect_finding(t.fill(owner, a.block(2), kBlock, 2.0f), KEEL_STATUS_FAILED_PRECONDITION,
                       {"race (write after read): kernel fill #2 on stream 1 writes", "memcpy_d2d #2 on stream 2 reads",
                        "(its source)"});
    }
}

TEST(CheckerAllocator, ABlockReusedAfterAnEventOfItsReaderIsClean) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream owner = t.stream(), reader = t.stream();
        Allocator a(t);
        keel_device_addr out = t.alloc(kBlock);
        keel_event ready = t.event(), read_done = t.event();
        ASSERT_FALSE(a.acquire(owner, a.block(2)));
        ASSERT_FALSE(t.fill(owner, a.block(2), kBlock, 1.0f));
        KEEL_ASSERT_OK(t.api().event_record(ready, owner));
        KEEL_ASSERT_OK(t.api().stream_wait_event(reader, ready));
        KEEL_ASSERT_OK(t.api().memcpy_d2d(reader, out, a.block(2), kBlock));
        KEEL_ASSERT_OK(t.api().event_record(read_done, reader));  // record_stream's event
        ASSERT_FALSE(a.release(owner, a.block(2)));
        KEEL_ASSERT_OK(t.api().stream_wait_event(owner, read_done));
        ASSERT_FALSE(a.acquire(owner, a.block(2)));
        ASSERT_FALSE(t.fill(owner, a.block(2), kBlock, 2.0f));
        EXPECT_EQ(t.read_f32(reader, out, kBlock / 4), std::vector<float>(kBlock / 4, 1.0f));
        EXPECT_EQ(t.read_f32(owner, a.block(2), kBlock / 4), std::vector<float>(kBlock / 4, 2.0f));
        EXPECT_TRUE(t.error_logs().empty());
    }
}

TEST(CheckerAllocator, ReleasingABlockTwiceIsADoubleFree) {
    CheckedSession t(ScopedEnv::Vars{{"KEEL_CPU_CHECK", "1"}});
    keel_stream s = t.stream();
    Allocator a(t);
    ASSERT_FALSE(a.release(s, a.block(3)));
    expect_finding(a.release(s, a.block(3)), KEEL_STATUS_FAILED_PRECONDITION,
                   {"double free: stream_annotate_range(RELEASED) on stream 1"});
}

TEST(CheckerAllocator, TheAnnotationEntryIsAbsentWhenTheCheckerIsOff) {
    {
        LoadedPlugin p;  // one load of the plugin at a time
        EXPECT_EQ(p.api().stream_annotate_range, nullptr);
    }
    CheckedSession t(ScopedEnv::Vars{{"KEEL_CPU_CHECK", "1"}});
    EXPECT_NE(t.api().stream_annotate_range, nullptr);
}

}  // namespace
}  // namespace keel::cpu::testing
