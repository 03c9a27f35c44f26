// Streams that come and go (a stream per request, a failed stream replaced)
// leave nothing behind in their memory instance: a closed stream's cached
// memory goes back to the plugin, and the completion tracker forgets it.
// Plain cpu:0 (no checker), through the public API.
#include <keel/keel.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <unistd.h>

namespace keel {
namespace {

// Resident set size of this process in bytes (0 where /proc is missing).
std::uint64_t resident_bytes() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) return 0;
    unsigned long long pages = 0, resident = 0;
    const int read = std::fscanf(f, "%llu %llu", &pages, &resident);
    std::fclose(f);
    return read == 2 ? resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

TEST(StreamChurn, AThousandStreamsKeepReservedMemoryWithinTwoSegmentsAndRssFlat) {
    Runtime rt = Runtime::create().expect("loading the plugins");
    auto device = rt.device("cpu:0");
    if (!device.ok()) GTEST_SKIP() << "no cpu:0: " << device.error().message();
    const DeviceMemory memory = DeviceMemory::create(*device, MemoryConfig{}).expect("DeviceMemory::create");
    constexpr std::uint64_t kBytes = 4ull << 20;
    std::uint64_t segment = 0;  // the reserved bytes of one cycle's segment
    std::uint64_t rss_after_warmup = 0;
    for (int cycle = 0; cycle < 1000; ++cycle) {
        {
            Stream stream = Stream::create(memory).expect("Stream::create");
            Buffer buffer = Buffer::allocate(stream, kBytes).expect("Buffer::allocate");
            ASSERT_TRUE(stream.memset(buffer, 1).ok());
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
    if (rss_after_warmup != 0)
        EXPECT_LT(rss, rss_after_warmup + (16ull << 20))
            << "RSS grew from " << rss_after_warmup << " to " << rss << " bytes over 900 cycles";
    EXPECT_EQ(memory.tracker_stats().outstanding, 0u);
}

}  // namespace
}  // namespace keel
