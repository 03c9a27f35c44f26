// Streams that come and go (a stream per request, a failed stream replaced)
// leave nothing behind in their memory instance: a closed stream's cached
// memory goes back to the plugin, and the completion tracker forgets it.
// cpu:0 through the public API, plain and in checked mode.
#include <keel/keel.hpp>
#include <keel/base/resident.hpp>

#include <gtest/gtest.h>

#include <memory>

namespace keel {
namespace {


TEST(StreamChurn, AThousandStreamsKeepReservedMemoryWithinTwoSegmentsAndRssFlat) {
    Runtime rt = Runtime::create().expect("loading the plugins");
    auto device = rt.device("cpu:0");
    if (!device.ok()) GTEST_SKIP() << "no cpu:0: " << device.error().message();
    const MemoryPool memory = MemoryPool::create(*device, MemoryConfig{}).expect("MemoryPool::create");
    constexpr std::uint64_t kBytes = 4ull << 20;
    constexpr std::uint64_t kTouched = 64ull << 10;
    std::uint64_t segment = 0;  // the reserved bytes of one cycle's segment
    std::uint64_t rss_after_warmup = 0;
    for (int cycle = 0; cycle < 1000; ++cycle) {
        {
            Stream stream = Stream::create(memory).expect("Stream::create");
            Buffer buffer = Buffer::allocate(stream, kBytes).expect("Buffer::allocate");
            // Touching the first 64 KiB is enough for a leaked segment to
            // show in RSS (900 of them: 56 MiB); touching all 4 MiB of a
            // fresh segment every cycle costs seconds of page faults.
            ASSERT_TRUE(stream.memset(buffer.view(0, kTouched).value(), 1).ok());
            if (cycle == 0) segment = memory.stats().reserved_bytes;
        }
        const AllocatorStats stats = memory.stats();
        ASSERT_LE(stats.reserved_bytes, 2 * segment)
            << "cycle " << cycle << ": " << stats.reserved_bytes << " bytes reserved with "
            << stats.allocated_bytes << " allocated; one segment is " << segment;
        if (cycle == 99) rss_after_warmup = resident_bytes();
    }
    EXPECT_GT(segment, 0u);
    const std::uint64_t rss = resident_bytes();
    if (rss_after_warmup != 0) {
        EXPECT_LT(rss, rss_after_warmup + (16ull << 20))
            << "RSS grew from " << rss_after_warmup << " to " << rss << " bytes over 900 cycles";
    }
    EXPECT_EQ(memory.tracker_stats().outstanding, 0u);
}

// Checked mode quarantines freed blocks; the segment of one that leaves the
// quarantine after its stream closed serves later streams or goes back to
// the plugin: not a segment per stream.
TEST(StreamChurn, CheckedModeReusesOrReleasesTheSegmentsOfClosedStreamsAsTheirBlocksLeaveTheQuarantine) {
    Runtime rt = Runtime::create().expect("loading the plugins");
    auto device = rt.device("cpu:0");
    if (!device.ok()) GTEST_SKIP() << "no cpu:0: " << device.error().message();
    MemoryConfig config;
    config.allocator.checked = true;
    config.allocator.quarantine_bytes = 1ull << 20;
    const MemoryPool memory = MemoryPool::create(*device, config).expect("MemoryPool::create");
    constexpr std::uint64_t kBytes = 256ull << 10;  // a small block: one small segment per stream
    std::uint64_t segment = 0;
    for (int cycle = 0; cycle < 200; ++cycle) {
        {
            Stream stream = Stream::create(memory).expect("Stream::create");
            Buffer buffer = Buffer::allocate(stream, kBytes).expect("Buffer::allocate");
            ASSERT_TRUE(stream.memset(buffer, 1).ok());
            if (cycle == 0) segment = memory.stats().reserved_bytes;
        }
        // The quarantine holds at most its bytes' worth of blocks, each in
        // the segment of a closed stream, plus the one just freed.
        const std::uint64_t bound = (config.allocator.quarantine_bytes / kBytes + 2) * segment;
        const AllocatorStats stats = memory.stats();
        ASSERT_LE(stats.reserved_bytes, bound) << "cycle " << cycle << ": " << stats.reserved_bytes
                                               << " bytes reserved in " << stats.segment_count
                                               << " segments; one segment is " << segment;
    }
    EXPECT_GT(segment, 0u);
    const AllocatorStats stats = memory.stats();
    EXPECT_LE(stats.raw_allocations, config.allocator.quarantine_bytes / kBytes + 2)
        << "200 streams made " << stats.raw_allocations << " segments (" << stats.raw_frees << " given back)";
}

}  // namespace
}  // namespace keel
