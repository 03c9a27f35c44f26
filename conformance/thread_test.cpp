// The thread-safety claims of the C++ API: Devices shared across threads,
// Streams sent to other threads, one Stream fed by several threads, events
// recorded on one thread and waited on in another.
#include "conformance.hpp"

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace keel::conformance {
namespace {

TEST_P(Conformance, SeveralThreadsEachWithTheirOwnStreamCopyCorrectly) {
    KEEL_RULE(0, "thread.any-thread");
    constexpr int kThreads = 4, kRounds = 25;
    constexpr std::size_t n = 4096;
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t, dev = device()] {  // a Device copied to each thread
            auto s = Stream::create(dev);
            if (!s.ok()) {
                ++failures;
                return;
            }
            auto buf = Buffer::allocate(*s, n);
            if (!buf.ok()) {
                ++failures;
                return;
            }
            for (int r = 0; r < kRounds; ++r) {
                const std::vector<std::uint8_t> in(n, static_cast<std::uint8_t>(t * 50 + r));
                if (!s->copy(*buf, in).ok()) ++failures;
                auto out = read_bytes(*s, *buf);
                if (!out.ok() || *out != in) ++failures;
            }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
}

TEST_P(Conformance, SeveralThreadsEnqueueingOnOneStreamKeepEachThreadsOrder) {
    KEEL_RULE(0, "thread.enqueue-order");
    constexpr int kThreads = 4, kPerThread = 200;
    std::mutex mutex;
    std::vector<std::vector<int>> seen(kThreads);
    std::atomic<int> enqueue_failures{0};
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < kPerThread; ++i) {
                auto r = s.enqueue_host_func([&, t, i] {
                    std::lock_guard lock(mutex);
                    seen[t].push_back(i);
                });
                if (!r.ok()) ++enqueue_failures;
            }
        });
    for (auto& th : threads) th.join();
    KEEL_ASSERT_OK(s.synchronize());
    EXPECT_EQ(enqueue_failures.load(), 0);
    for (int t = 0; t < kThreads; ++t) {
        ASSERT_EQ(seen[t].size(), static_cast<std::size_t>(kPerThread));
        for (int i = 0; i < kPerThread; ++i) EXPECT_EQ(seen[t][i], i);
    }
}

TEST_P(Conformance, AStreamMovedToAnotherThreadKeepsWorking) {
    KEEL_RULE(0, "thread.any-thread");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 256));
    std::vector<std::uint8_t> out(256, 0);
    Result<void> result = ok();
    std::thread worker([&, stream = std::move(s), b = std::move(buf)]() mutable {
        result = stream.copy(b, std::vector<std::uint8_t>(256, 0x42));
        if (result.ok()) {
            auto copy = stream.copy(out, b);
            result = copy.ok() ? copy->wait() : Result<void>(std::move(copy).error());
        }
        b.reset();  // a buffer sent along with its stream, freed there
        if (result.ok()) result = stream.close();
    });
    worker.join();
    ASSERT_TRUE(result.ok()) << result.error().message();
    EXPECT_EQ(out, std::vector<std::uint8_t>(256, 0x42));
}

TEST_P(Conformance, AnEventRecordedOnOneThreadIsWaitedOnByAnother) {
    KEEL_RULE(0, "thread.any-thread");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream a, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event e, Event::create(device()));
    std::atomic<bool> recorded{false};
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(a));
    std::thread recorder([&] {
        if (e.record(a).ok()) recorded = true;
    });
    recorder.join();
    ASSERT_TRUE(recorded.load());
    Result<void> waited = ok();
    std::thread waiter([&] { waited = e.synchronize(); });
    gate.open();
    waiter.join();
    KEEL_EXPECT_OK(waited);
    KEEL_ASSERT_OK_AND_ASSIGN(bool done, e.query());
    EXPECT_TRUE(done);
}

}  // namespace
}  // namespace keel::conformance
