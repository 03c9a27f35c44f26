// Streams: asynchronous, in order; host functions.
#include "conformance.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace keel::conformance {
namespace {

TEST_P(Conformance, EnqueueReturnsBeforeTheWorkRuns) {
    KEEL_RULE(0, "enqueue.never-blocks");
    KEEL_ASSERT_OK_AND_ASSIGN(PinnedBuffer out, PinnedBuffer::allocate(device(), 256));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 256));
    std::fill(out.as<std::uint8_t>().begin(), out.as<std::uint8_t>().end(), 0);
    KEEL_ASSERT_OK(s.memset(buf, 0xab));
    KEEL_ASSERT_OK(s.synchronize());
    const auto bytes = [&out] { return Bytes(out.as<std::uint8_t>().begin(), out.as<std::uint8_t>().end()); };

    Gate gate;
    KEEL_ASSERT_OK(gate.hold(s));
    KEEL_ASSERT_OK(s.copy(out, buf));
    KEEL_ASSERT_OK_AND_ASSIGN(bool done, s.query());
    EXPECT_FALSE(done) << "the stream reports done while its work is held back";
    EXPECT_EQ(bytes(), Bytes(256, 0)) << "the copy ran before the stream reached it";

    gate.open();
    KEEL_ASSERT_OK(s.synchronize());
    EXPECT_FALSE(gate.timed_out()) << "the plugin ran the host function inline, at enqueue";
    EXPECT_EQ(bytes(), Bytes(256, 0xab));
    KEEL_ASSERT_OK_AND_ASSIGN(bool done_now, s.query());
    EXPECT_TRUE(done_now);
}

// Counts its destruction; the object a test hands to Stream::hold.
struct Watched {
    explicit Watched(std::shared_ptr<std::atomic<int>> d) : destroyed(std::move(d)) {}
    Watched(Watched&& other) noexcept : destroyed(std::move(other.destroyed)) {}
    Watched(const Watched&) = delete;
    ~Watched() {
        if (destroyed) destroyed->fetch_add(1);
    }
    std::shared_ptr<std::atomic<int>> destroyed;
};

TEST_P(Conformance, AHoldReleasesItsObjectOnlyAfterTheStreamPassedIt) {
    KEEL_RULE(0, "event.record");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    auto destroyed = std::make_shared<std::atomic<int>>(0);
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(s));
    KEEL_ASSERT_OK(s.hold(Watched(destroyed)));  // returns at once
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(destroyed->load(), 0) << "released before the stream reached the hold";
    gate.open();
    KEEL_ASSERT_OK(s.synchronize());
    // Released by a later sweep on a host thread (the reclaimer, or any call
    // into the device's memory machinery), without a host function.
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, s.memory());
    memory.sweep();
    EXPECT_EQ(destroyed->load(), 1);
}

TEST_P(Conformance, AHoldOnAnEmptyStreamFailsAndReleasesAtOnce) {
    KEEL_RULE(0, "handle.runtime-checks");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    Stream moved = std::move(s);
    auto destroyed = std::make_shared<std::atomic<int>>(0);
    auto held = s.hold(Watched(destroyed));  // NOLINT(bugprone-use-after-move): the point
    ASSERT_FALSE(held.ok());
    EXPECT_EQ(held.error().code(), KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(destroyed->load(), 1);
}

TEST_P(Conformance, ABufferMayOutliveItsStreamInEveryAllocatorMode) {
    KEEL_RULE(0, "memory.free");
    // Freeing such a buffer must not call the plugin on the closed stream:
    // uncached memory waits for its stream, checked memory poisons on it.
    MemoryConfig uncached;
    uncached.allocator.caching = false;
    MemoryConfig checked;
    checked.allocator.checked = true;
    for (const MemoryConfig& config : {uncached, checked}) {
        KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device(), config));
        Buffer buffer;
        {
            KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(memory));
            KEEL_ASSERT_OK_AND_ASSIGN(buffer, Buffer::allocate(s, 4096));
            KEEL_ASSERT_OK(s.memset(buffer, 0x11));
        }
        buffer.reset();
        KEEL_EXPECT_OK(memory.release_cached());
        // The instance still serves new streams.
        KEEL_ASSERT_OK_AND_ASSIGN(Stream again, Stream::create(memory));
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer fresh, Buffer::allocate(again, 4096));
        KEEL_ASSERT_OK(again.memset(fresh, 0x22));
        KEEL_ASSERT_OK_AND_ASSIGN(Bytes out, read_bytes(again, fresh));
        EXPECT_EQ(out, Bytes(4096, 0x22));
    }
}

TEST_P(Conformance, ReleasingCachedMemoryWaitsForTheWorkThatStillUsesIt) {
    KEEL_RULE(0, "memory.free");
    // A freed buffer is at once reusable by its stream, whose queued work
    // may still use it: giving its segment back to the plugin must wait.
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(memory));
    Gate gate;
    std::optional<HostFuture<std::uint8_t>> pending;
    {
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer buffer, Buffer::allocate(s, 1 << 16));
        KEEL_ASSERT_OK(gate.hold(s));
        KEEL_ASSERT_OK(s.memset(buffer, 0x5a));
        KEEL_ASSERT_OK_AND_ASSIGN(pending, s.copy_to_vector<std::uint8_t>(buffer));
    }  // freed, stream-ordered, while the memset and the read are held back
    // release_cached() returns only once the held work ran, so the gate
    // opens from another thread.
    std::thread opener([&gate] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        gate.open();
    });
    const Result<void> released = memory.release_cached();
    opener.join();
    KEEL_EXPECT_OK(released);
    KEEL_ASSERT_OK_AND_ASSIGN(Bytes out, std::move(*pending).get());
    EXPECT_EQ(out, Bytes(1 << 16, 0x5a));
    KEEL_EXPECT_OK(s.synchronize());
}

TEST_P(Conformance, StreamRunsWorkInEnqueueOrder) {
    KEEL_RULE(0, "stream.in-order");
    std::vector<int> order;
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer a, Buffer::allocate(s, 4096));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, 4096));
    const Bytes first(4096, 1), second(4096, 2);
    Bytes after_memset(4096, 0), after_d2d(4096, 0);

    Gate gate;  // hold everything back so that order, not timing, decides
    KEEL_ASSERT_OK(gate.hold(s));
    KEEL_ASSERT_OK(s.copy(a, first));
    KEEL_ASSERT_OK(s.enqueue_host_func([&] { order.push_back(0); }));
    KEEL_ASSERT_OK(s.memset(a, 7));
    KEEL_ASSERT_OK_AND_ASSIGN(HostCopy memset_copy, s.copy(after_memset, a));
    KEEL_ASSERT_OK(s.enqueue_host_func([&] { order.push_back(1); }));
    KEEL_ASSERT_OK(s.copy(a, second));
    KEEL_ASSERT_OK(s.copy(b, a));
    KEEL_ASSERT_OK_AND_ASSIGN(HostCopy d2d_copy, s.copy(after_d2d, b));
    for (int i = 2; i < 100; ++i) KEEL_ASSERT_OK(s.enqueue_host_func([&order, i] { order.push_back(i); }));
    gate.open();
    KEEL_ASSERT_OK(s.synchronize());
    KEEL_ASSERT_OK(memset_copy.wait());
    KEEL_ASSERT_OK(d2d_copy.wait());

    EXPECT_EQ(after_memset, Bytes(4096, 7));
    EXPECT_EQ(after_d2d, second);
    ASSERT_EQ(order.size(), 100u);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

// The host thread only polls a flag a host function sets: no synchronize,
// no query, no event. A plugin that runs work only when something waits
// (a lazy checker without patience) never sets it.
TEST_P(Conformance, WorkCompletesWithNoHostWait) {
    KEEL_RULE(0, "stream.forward-progress");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer buf, Buffer::allocate(s, 256));
    std::atomic<bool> flag{false};
    KEEL_ASSERT_OK(s.memset(buf, 0x5a));
    KEEL_ASSERT_OK(s.enqueue_host_func([&flag] { flag.store(true, std::memory_order_release); }));
    // Generous: the bound is the plugin's, the wait only has to end.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!flag.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const bool ran = flag.load(std::memory_order_acquire);
    KEEL_ASSERT_OK(s.synchronize());  // after the verdict; it also keeps `flag` alive until the function ran
    EXPECT_TRUE(ran) << device().name() << " ran nothing in 20 s while no host thread waited";
}

TEST_P(Conformance, HostFunctionsRunWithStatusOk) {
    KEEL_RULE(0, "host-func.status");
    std::vector<Status> seen;
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK(s.enqueue_host_func([&](Status st) { seen.push_back(st); }));
    KEEL_ASSERT_OK(s.synchronize());
    EXPECT_EQ(seen, std::vector<Status>{KEEL_STATUS_OK});
}

TEST_P(Conformance, HostFunctionRunsOnAnotherThreadThanTheCaller) {
    KEEL_RULE(0, "host-func.plugin-thread");
    std::thread::id ran_on;
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK(s.enqueue_host_func([&] { ran_on = std::this_thread::get_id(); }));
    KEEL_ASSERT_OK(s.synchronize());
    EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST_P(Conformance, AHostFunctionIsDestroyedRightAfterItRuns) {
    KEEL_RULE(0, "stream.host-func");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    auto token = std::make_shared<int>(0);
    KEEL_ASSERT_OK(s.enqueue_host_func([token] { ++*token; }));
    KEEL_ASSERT_OK(s.synchronize());
    EXPECT_EQ(*token, 1);
    EXPECT_EQ(token.use_count(), 1) << "the stream kept the callable after it ran";
}

TEST_P(Conformance, MoveOnlyCallablesAreAccepted) {
    KEEL_RULE(0, "stream.host-func");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    auto owned = std::make_unique<int>(41);
    int seen = 0;
    KEEL_ASSERT_OK(s.enqueue_host_func([p = std::move(owned), &seen] { seen = *p + 1; }));
    KEEL_ASSERT_OK(s.synchronize());
    EXPECT_EQ(seen, 42);
}

TEST_P(Conformance, AFailedEnqueueDestroysTheCallableWithoutRunningIt) {
    KEEL_RULE(0, "error.outputs-on-success");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    Stream moved = std::move(s);
    auto token = std::make_shared<int>(0);
    KEEL_EXPECT_ERROR(s.enqueue_host_func([token] { ++*token; }), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_ASSERT_OK(moved.synchronize());
    EXPECT_EQ(*token, 0);
    EXPECT_EQ(token.use_count(), 1);
}

TEST_P(Conformance, ManyStreamsCanBeCreatedAndDestroyed) {
    KEEL_RULE(0, "stream.destroy");
    for (int round = 0; round < 3; ++round) {
        std::atomic<int> ran{0};  // streams run concurrently
        std::vector<Stream> streams;
        for (int i = 0; i < 16; ++i) {
            KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
            streams.push_back(std::move(s));
        }
        for (const Stream& s : streams) KEEL_ASSERT_OK(s.enqueue_host_func([&ran] { ++ran; }));
        for (Stream& s : streams) KEEL_ASSERT_OK(s.close());
        EXPECT_EQ(ran.load(), 16) << "closing a stream waits for its work";
    }
}

// Optional (ABI 1.1): a handle with a kind, or UNIMPLEMENTED (a skip).
TEST_P(Conformance, NativeHandlesHaveAKindAndAreStablePerStream) {
    KEEL_RULE(1, "native.stream-handle");
    auto d = device().native_handle();
    if (!d.ok() && d.error().code() == KEEL_STATUS_UNIMPLEMENTED)
        GTEST_SKIP() << device().name() << " has no native handles (optional entry absent)";
    KEEL_ASSERT_OK(d);
    EXPECT_NE(d->kind, KEEL_NATIVE_HANDLE_NONE);
    KEEL_ASSERT_OK_AND_ASSIGN(Stream a, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream b, Stream::create(device()));
    auto ha = a.native_handle();
    if (!ha.ok() && ha.error().code() == KEEL_STATUS_UNIMPLEMENTED)
        GTEST_SKIP() << device().name() << " has no native stream handle (optional entry absent)";
    KEEL_ASSERT_OK(ha);
    KEEL_ASSERT_OK_AND_ASSIGN(NativeHandle hb, b.native_handle());
    EXPECT_NE(ha->kind, KEEL_NATIVE_HANDLE_NONE);
    EXPECT_NE(ha->value, hb.value) << "two streams, two queues";
    KEEL_ASSERT_OK_AND_ASSIGN(NativeHandle again, a.native_handle());
    EXPECT_EQ(again.value, ha->value);
}

}  // namespace
}  // namespace keel::conformance
