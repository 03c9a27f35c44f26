// Buffers that outlive their stream: the free memory beside them, in the
// segments the closed stream cut, stays usable by the streams that remain
// (or goes back to the device), so that streams coming and going while some
// of their buffers live on keep reserved memory within a small multiple of
// what is alive. On every device that loads: cpu:0, and level_zero:0 on the
// fake driver (cuda:0 where a GPU is).
#include <keel/keel.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace {

class ClosedStreamMemory : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        auto device = runtime_.device(GetParam());
        if (!device.ok()) GTEST_SKIP() << GetParam() << " is not here: " << device.error().message();
        device_.emplace(std::move(*device));
        memory_.emplace(keel::DeviceMemory::create(*device_, keel::MemoryConfig{}).expect("DeviceMemory::create"));
    }
    keel::Runtime runtime_ = keel::Runtime::create().expect("loading the plugins");
    std::optional<keel::Device> device_;
    std::optional<keel::DeviceMemory> memory_;
};

constexpr std::uint64_t kBuffer = 192ull << 10;  // well under a segment
constexpr int kPerStream = 8;

// One stream of the pattern: eight buffers used on it, one kept, the
// stream closed while the kept one lives on.
void one_stream(const keel::DeviceMemory& memory, std::vector<keel::Buffer>& kept) {
    keel::Stream stream = keel::Stream::create(memory).expect("Stream::create");
    std::vector<keel::Buffer> buffers;
    for (int i = 0; i < kPerStream; ++i) {
        buffers.push_back(keel::Buffer::allocate(stream, kBuffer).expect("Buffer::allocate"));
        ASSERT_TRUE(stream.memset(buffers.back(), static_cast<std::uint8_t>(i)).ok());
    }
    kept.push_back(std::move(buffers[static_cast<std::size_t>(kept.size() % kPerStream)]));
}

TEST_P(ClosedStreamMemory, ReservedStaysWithinASmallMultipleOfWhatIsAliveWhateverTheNumberOfStreams) {
    std::vector<keel::Buffer> kept;
    std::uint64_t segment = 0;  // what the first stream reserved
    for (int n = 0; n < 300; ++n) {
        one_stream(*memory_, kept);
        if (::testing::Test::HasFatalFailure()) return;
        const keel::AllocatorStats stats = memory_->stats();
        if (n == 0) segment = stats.reserved_bytes;
        // Twice what is alive, plus two segments' worth of slack.
        ASSERT_LE(stats.reserved_bytes, 2 * stats.allocated_bytes + 2 * segment)
            << "after " << n + 1 << " streams: " << stats.reserved_bytes << " bytes reserved in "
            << stats.segment_count << " segments for " << stats.allocated_bytes << " allocated";
    }
    EXPECT_GT(segment, 0u);
    kept.clear();
    const keel::AllocatorStats stats = memory_->stats();
    EXPECT_EQ(stats.reserved_bytes, 0u) << "every stream is closed and every buffer dropped, yet "
                                        << stats.segment_count << " segments stay reserved";
}

// A buffer of a closed stream used on another stream (record_stream), then
// dropped after that stream closed too: nothing stays behind.
TEST_P(ClosedStreamMemory, ABufferRecordedOnAnotherStreamGoesBackWhenBothStreamsClosed) {
    std::optional<keel::Buffer> survivor;
    {
        keel::Stream owner = keel::Stream::create(*memory_).expect("Stream::create");
        keel::Stream user = keel::Stream::create(*memory_).expect("Stream::create");
        std::vector<keel::Buffer> buffers;
        for (int i = 0; i < kPerStream; ++i)
            buffers.push_back(keel::Buffer::allocate(owner, kBuffer).expect("Buffer::allocate"));
        ASSERT_TRUE(owner.synchronize().ok());
        ASSERT_TRUE(user.memset(buffers[0], 7).ok());
        ASSERT_TRUE(buffers[0].record_stream(user).ok());
        ASSERT_TRUE(buffers[1].record_stream(user).ok());
        survivor.emplace(std::move(buffers[1]));
        buffers.clear();  // buffer 0 is pending on `user`, the rest free
    }
    survivor.reset();
    const keel::AllocatorStats stats = memory_->stats();
    EXPECT_EQ(stats.reserved_bytes, 0u) << stats.segment_count << " segments stay reserved";
    EXPECT_EQ(stats.pending_free_count, 0u);
}

// The free memory a closed stream left beside a live buffer serves the next
// stream: it reserves nothing new.
TEST_P(ClosedStreamMemory, TheNextStreamReusesTheFreeMemoryBesideABufferThatOutlivedItsStream) {
    std::vector<keel::Buffer> kept;
    one_stream(*memory_, kept);
    const std::uint64_t reserved = memory_->stats().reserved_bytes;
    keel::Stream next = keel::Stream::create(*memory_).expect("Stream::create");
    keel::Buffer buffer = keel::Buffer::allocate(next, kBuffer).expect("Buffer::allocate");
    ASSERT_TRUE(next.memset(buffer, 3).ok());
    ASSERT_TRUE(next.synchronize().ok());
    EXPECT_EQ(memory_->stats().reserved_bytes, reserved);
}

INSTANTIATE_TEST_SUITE_P(Devices, ClosedStreamMemory, ::testing::Values("cpu:0", "level_zero:0", "cuda:0"),
                         [](const auto& info) {
                             std::string name = info.param;
                             for (char& c : name)
                                 if (c == ':') c = '_';
                             return name;
                         });

}  // namespace
