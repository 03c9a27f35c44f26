// Buffers that outlive their stream: the free memory beside them, in the
// segments the closed stream cut, stays usable by the streams that remain
// (or goes back to the device), so that streams coming and going while some
// of their buffers live on keep reserved memory within a small multiple of
// what is alive. On every device that loads: cpu:0, and level_zero:0 on the
// fake driver (cuda:0 where a GPU is).
#include "device_fixture.hpp"

#include <keel/keel.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

class ClosedStreamMemory : public keel::testing::EveryDevice {
protected:
    void SetUp() override {
        EveryDevice::SetUp();
        if (IsSkipped()) return;
        memory_.emplace(keel::MemoryPool::create(device(), keel::MemoryConfig{}).expect("MemoryPool::create"));
    }
    std::optional<keel::MemoryPool> memory_;
};

constexpr std::uint64_t kBuffer = 192ull << 10;  // well under a segment
constexpr int kPerStream = 8;

// One stream of the pattern: eight buffers used on it, one kept, the
// stream closed while the kept one lives on.
void one_stream(const keel::MemoryPool& memory, std::vector<keel::Buffer>& kept) {
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
    // A stream opened after each close and kept open takes the closed
    // stream's handle where the plugin hands destroyed handles out again
    // (the fake Level Zero driver does), so that every stream of the pattern
    // is a new handle, as with plugins that never reuse one.
    std::vector<keel::Stream> spacers;
    std::uint64_t segment = 0;  // what the first stream reserved
    for (int n = 0; n < 150; ++n) {
        one_stream(*memory_, kept);
        if (::testing::Test::HasFatalFailure()) return;
        spacers.push_back(keel::Stream::create(*memory_).expect("Stream::create"));
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

// A stream closed with work queued finishes it first; a hold on it lets go
// of its buffer, and nothing stays reserved or tracked.
TEST_P(ClosedStreamMemory, AStreamClosedWithWorkQueuedFinishesItAndGivesEverythingBack) {
    {
        keel::Stream stream = keel::Stream::create(*memory_).expect("Stream::create");
        for (int i = 0; i < kPerStream; ++i) {
            keel::Buffer buffer = keel::Buffer::allocate(stream, kBuffer).expect("Buffer::allocate");
            ASSERT_TRUE(stream.memset(buffer, static_cast<std::uint8_t>(i)).ok());
            ASSERT_TRUE(stream.hold(std::move(buffer)).ok());
        }
    }
    const keel::AllocatorStats stats = memory_->stats();
    EXPECT_EQ(stats.allocated_bytes, 0u);
    EXPECT_EQ(stats.reserved_bytes, 0u);
    EXPECT_EQ(memory_->tracker_stats().outstanding, 0u);
}

// What a closed stream wrote is seen by a later stream through its fence or
// an event recorded on it, and the buffer it wrote is read back intact while
// the next stream reuses the memory beside it.
TEST_P(ClosedStreamMemory, FencesAndEventsOfAClosedStreamKeepTheirMeaning) {
    constexpr std::size_t kWords = kBuffer / 4;
    std::optional<keel::Buffer> written;
    std::optional<keel::Fence> fence;
    std::optional<keel::Event> event;
    {
        keel::Stream writer = keel::Stream::create(*memory_).expect("Stream::create");
        std::vector<keel::Buffer> beside;
        for (int i = 0; i < kPerStream; ++i)
            beside.push_back(keel::Buffer::allocate(writer, kBuffer).expect("Buffer::allocate"));
        written.emplace(std::move(beside[3]));
        ASSERT_TRUE(writer.memset(*written, 0x5a).ok());
        fence.emplace(writer.fence().expect("Stream::fence"));
        event.emplace(keel::Event::create(*device_).expect("Event::create"));
        ASSERT_TRUE(event->record(writer).ok());
    }
    keel::Stream reader = keel::Stream::create(*memory_).expect("Stream::create");
    ASSERT_TRUE(reader.wait(*fence).ok());
    ASSERT_TRUE(reader.wait(*event).ok());
    // The memory the writer left beside `written` serves the reader.
    std::vector<keel::Buffer> reused;
    for (int i = 0; i < kPerStream - 1; ++i) {
        reused.push_back(keel::Buffer::allocate(reader, kBuffer).expect("Buffer::allocate"));
        ASSERT_TRUE(reader.memset(reused.back(), 0xa5).ok());
    }
    auto view = written->view(0, kBuffer).expect("Buffer::view");
    auto got = reader.copy_to_vector<std::uint32_t>(view).expect("copy_to_vector").get().expect("the read-back");
    ASSERT_EQ(got.size(), kWords);
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], 0x5a5a5a5au) << "word " << i;
    reused.clear();
    written.reset();
    fence.reset();
    event.reset();
    ASSERT_TRUE(reader.synchronize().ok());
}

// Threads churn streams while another thread drops the buffers that
// outlived them: segments move between pools while their blocks are freed
// from other threads (run under TSan too). Reserved memory stays bounded,
// and everything goes back at the end.
TEST_P(ClosedStreamMemory, ThreadsChurningStreamsWhileAnotherDropsTheirSurvivorsLeaveNothingBehind) {
    constexpr int kThreads = 3;
    constexpr int kStreams = 60;
    std::mutex mu;
    std::deque<keel::Buffer> survivors;  // guarded by mu
    std::atomic<int> producing{kThreads};
    std::atomic<std::uint64_t> worst{0};  // reserved bytes beyond the bound, at worst
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&] {
            std::vector<keel::Buffer> kept;
            for (int n = 0; n < kStreams; ++n) {
                kept.clear();
                one_stream(*memory_, kept);
                std::lock_guard lock(mu);
                for (keel::Buffer& b : kept) survivors.push_back(std::move(b));
            }
            producing.fetch_sub(1);
        });
    threads.emplace_back([&] {
        for (;;) {
            std::optional<keel::Buffer> dropped;
            {
                std::lock_guard lock(mu);
                if (survivors.size() > 8) {
                    dropped.emplace(std::move(survivors.front()));
                    survivors.pop_front();
                } else if (producing.load() == 0) {
                    return;
                }
            }
            if (!dropped) std::this_thread::yield();
            dropped.reset();
            const keel::AllocatorStats stats = memory_->stats();
            // Each producer's own stream may hold a segment or two of its own.
            const std::uint64_t bound = 2 * stats.allocated_bytes + 4 * (kThreads + 1) * (2ull << 20);
            if (stats.reserved_bytes > bound) {
                std::uint64_t over = stats.reserved_bytes - bound;
                std::uint64_t seen = worst.load();
                while (over > seen && !worst.compare_exchange_weak(seen, over)) {
                }
            }
        }
    });
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(worst.load(), 0u) << "reserved memory went this many bytes past twice what was allocated plus slack";
    survivors.clear();
    const keel::AllocatorStats stats = memory_->stats();
    EXPECT_EQ(stats.allocated_bytes, 0u);
    EXPECT_EQ(stats.reserved_bytes, 0u) << stats.segment_count << " segments stay reserved";
}

KEEL_ON_EVERY_DEVICE(ClosedStreamMemory);

}  // namespace
