// Checked memory (KEEL_CHECK=1) end to end on the CPU plugin, written the
// way framework code is: each test plants one lifetime bug inside the
// caching allocator and expects the program to fail (an error from the
// offending call or from its stream), and its clean twin passes. The
// process sets KEEL_CHECK=1 before loading the plugins, so the runtime's
// checked mode and the CPU plugin's checker (happens-before included) are
// both on, with random delays on the device so that nothing here depends on
// timing.
#include "device_fixture.hpp"

#include <keel/keel.hpp>
#include <keel/testing/gate.hpp>
#include <keel/testing/result.hpp>
#include <keel/testing/scoped_env.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace keel {
namespace {

using testing::Gate;

const Runtime& runtime() {
    // KEEL_CPU_SEED=N in the environment picks another schedule.
    static Runtime rt = testing::runtime_with(
        {{"KEEL_CHECK", "1"}, {"KEEL_CPU_DELAY", "random:200"}, {"KEEL_CPU_SEED", "7", true}});
    return rt;
}

bool says(const Result<void>& r, const std::string& what) {
    return !r.ok() && r.error().message().find(what) != std::string::npos;
}
std::string text(const Result<void>& r) { return r.ok() ? std::string("OK") : r.error().message(); }

class CheckedMemory : public ::testing::Test {
protected:
    void SetUp() override {
        auto d = runtime().device("cpu:0");
        if (!d.ok()) GTEST_SKIP() << "no cpu:0: " << d.error().message();
        device_ = std::make_unique<Device>(*d);
        // A private instance per test; checked because KEEL_CHECK=1.
        MemoryConfig config;
        config.allocator.quarantine_bytes = quarantine_bytes();
        memory_ = std::make_unique<MemoryPool>(MemoryPool::create(*device_, config).expect("MemoryPool"));
    }
    virtual std::uint64_t quarantine_bytes() const { return 64 * MiB; }
    const Device& device() const { return *device_; }
    const MemoryPool& memory() const { return *memory_; }
    Stream stream() const { return Stream::create(memory()).expect("Stream::create"); }
    static std::vector<std::uint8_t> read(const Stream& s, DeviceView view) {
        return s.copy_to_vector<std::uint8_t>(view).expect("copy_to_vector").get().expect("the copy");
    }

    std::unique_ptr<Device> device_;
    std::unique_ptr<MemoryPool> memory_;
};

enum class Record { never, before_use, after_use };

// The framework pattern every cross-stream test plants its bug in: on s1,
// `a` = 64 KiB of 0x11; s2, ordered after that write (and held at `gate`,
// if any, so the read is still queued), copies `a` into its own `b`.
// record_stream(s2) on `a` is called as `record` says.
Result<void> read_on_other_stream(const Stream& s1, const Stream& s2, Gate* gate, Record record, Buffer& a,
                                  Buffer& b) {
    KEEL_TRY_ASSIGN(a, Buffer::allocate(s1, 64 * KiB));
    KEEL_TRY_ASSIGN(b, Buffer::allocate(s2, 64 * KiB));
    KEEL_TRY(s1.memset(a, 0x11));
    KEEL_TRY(s2.order_after(s1));
    if (gate != nullptr) KEEL_TRY(gate->hold(s2));
    if (record == Record::before_use) KEEL_TRY(a.record_stream(s2));  // as code ported from PyTorch does
    KEEL_TRY(s2.copy(b, a));
    if (record == Record::after_use) KEEL_TRY(a.record_stream(s2));
    return ok();
}

// ---- a range past its buffer -------------------------------------------------

TEST_F(CheckedMemory, ACopyOneBytePastACachedBlockIsRefusedAndTheNeighbourIsIntact) {
    Stream s = stream();
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer a, Buffer::allocate(s, 1000));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, 1000));
    KEEL_ASSERT_OK(s.memset(b, 0x22));
    const std::vector<std::uint8_t> host(1001, 0x11);
    const DeviceView too_long(device(), a.address(), a.size() + 1);  // the bug: one byte too many
    const Result<void> r = s.copy(too_long, host);
    EXPECT_EQ(r.ok() ? KEEL_STATUS_OK : r.error().code(), KEEL_STATUS_OUT_OF_RANGE);
    EXPECT_TRUE(says(r, "runs 1 byte(s) past the end")) << text(r);
    EXPECT_EQ(read(s, b), std::vector<std::uint8_t>(1000, 0x22));
}

TEST_F(CheckedMemory, ACopyOfExactlyTheBufferPasses) {
    Stream s = stream();
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer a, Buffer::allocate(s, 1000));
    KEEL_ASSERT_OK(s.copy(a, std::vector<std::uint8_t>(1000, 0x11)));
    EXPECT_EQ(read(s, a), std::vector<std::uint8_t>(1000, 0x11));
}

TEST_F(CheckedMemory, AKernelArgumentPastItsBufferIsRefused) {
    Stream s = stream();
    KEEL_ASSERT_OK_AND_ASSIGN(Kernel fill, Kernel::find(device(), "fill"));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer a, Buffer::allocate(s, 1024));
    const DeviceView too_long(device(), a.address(), a.size() + sizeof(float));
    const Result<void> bad = s.launch(fill, KernelArgs().buffer(too_long, KEEL_DTYPE_F32).scalar(1.0f));
    EXPECT_TRUE(says(bad, "past the end")) << text(bad);
    KEEL_EXPECT_OK(s.launch(fill, KernelArgs().buffer(a, KEEL_DTYPE_F32).scalar(1.0f)));  // the twin
    KEEL_EXPECT_OK(s.synchronize());
}

// ---- a view of a freed buffer --------------------------------------------------

TEST_F(CheckedMemory, AStaleViewAfterResetIsAUseAfterFree) {
    Stream s = stream();
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer a, Buffer::allocate(s, 4096));
    const DeviceView kept = a.view();
    a.reset();  // the bug: `kept` outlives the buffer
    const Result<void> r = s.memset(kept, 0);
    EXPECT_TRUE(says(r, "use after free")) << text(r);
    KEEL_EXPECT_OK(s.synchronize());  // refused, so nothing ran
}

TEST_F(CheckedMemory, AViewUsedBeforeResetPasses) {
    Stream s = stream();
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer a, Buffer::allocate(s, 4096));
    const DeviceView kept = a.view();
    KEEL_EXPECT_OK(s.memset(kept, 0));
    a.reset();
    KEEL_EXPECT_OK(s.synchronize());
}

// ---- another stream's use ------------------------------------------------------

TEST_F(CheckedMemory, AConsumerStreamThatNeverWaitsForItsProducerIsARace) {
    Stream producer = stream(), consumer = stream();
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer a, Buffer::allocate(producer, 64 * KiB));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(consumer, 64 * KiB));
    KEEL_ASSERT_OK(producer.memset(a, 0x11));
    const Result<void> r = consumer.copy(b, a);  // the bug: no order_after(producer)
    EXPECT_TRUE(says(r, "race")) << text(r);
}

TEST_F(CheckedMemory, AConsumerStreamOrderedAfterItsProducerPasses) {
    Stream producer = stream(), consumer = stream();
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer a, Buffer::allocate(producer, 64 * KiB));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(consumer, 64 * KiB));
    KEEL_ASSERT_OK(producer.memset(a, 0x11));
    KEEL_ASSERT_OK(consumer.order_after(producer));
    KEEL_ASSERT_OK(consumer.copy(b, a));
    EXPECT_EQ(read(consumer, b), std::vector<std::uint8_t>(64 * KiB, 0x11));
    KEEL_ASSERT_OK(producer.order_after(consumer));  // a is freed on producer after consumer read it
}

// A buffer freed while another stream, never declared with record_stream,
// still reads it: the freed block's poisoning (in its own stream's order)
// races with that read, whatever the timing, and fails both streams.
TEST_F(CheckedMemory, UseOnAnotherStreamWithoutRecordStreamFailsTheProgram) {
    Stream s1 = stream(), s2 = stream();
    Gate gate;
    Buffer a, b;
    KEEL_ASSERT_OK(read_on_other_stream(s1, s2, &gate, Record::never, a, b));
    a.reset();  // the bug: s2 still reads a, and nobody said so
    gate.open();
    const Result<void> r1 = s1.synchronize();
    EXPECT_TRUE(says(r1, "race")) << text(r1);
    (void)s2.synchronize();
}

void use_on_another_stream(const Stream& s1, const Stream& s2, Record record) {
    Gate gate;
    Buffer a, b;
    KEEL_ASSERT_OK(read_on_other_stream(s1, s2, &gate, record, a, b));
    a.reset();
    // Reuse on s1 at once: a different block or one ordered after s2's read.
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer c, Buffer::allocate(s1, 64 * KiB));
    KEEL_ASSERT_OK(s1.memset(c, 0x22));
    gate.open();
    KEEL_ASSERT_OK(s1.synchronize());
    KEEL_ASSERT_OK(s2.synchronize());
    const std::vector<std::uint8_t> got = s2.copy_to_vector<std::uint8_t>(b).expect("copy").get().expect("read");
    EXPECT_EQ(got, std::vector<std::uint8_t>(64 * KiB, 0x11));
}

TEST_F(CheckedMemory, RecordStreamAfterTheUsePasses) {
    Stream s1 = stream(), s2 = stream();
    use_on_another_stream(s1, s2, Record::after_use);
}

// PyTorch records the event when the buffer is freed, so record_stream
// before the use is enqueued is correct; so it is here.
TEST_F(CheckedMemory, RecordStreamBeforeTheUseIsEnqueuedPasses) {
    Stream s1 = stream(), s2 = stream();
    use_on_another_stream(s1, s2, Record::before_use);
}

// ---- guard bytes -----------------------------------------------------------------

class CheckedMemoryNoQuarantine : public CheckedMemory {
protected:
    std::uint64_t quarantine_bytes() const override { return 0; }
};

// Memory of one instance written through a stream of another instance is
// not this instance's to check at the call; the guard past the buffer sees
// the overflow when the block is freed, and the next allocation fails.
TEST_F(CheckedMemoryNoQuarantine, AWritePastTheBufferIsFoundInItsGuardAndFailsTheNextAllocation) {
    Stream s = stream();
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool other, MemoryPool::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream foreign, Stream::create(other));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer a, Buffer::allocate(s, 1000));
    KEEL_ASSERT_OK(foreign.order_after(s));
    KEEL_ASSERT_OK(foreign.memset(DeviceView(device(), a.address(), a.size() + 8), 0x77));  // the bug
    KEEL_ASSERT_OK(s.order_after(foreign));
    a.reset();
    const Result<Buffer> next = Buffer::allocate(s, 1000);
    ASSERT_FALSE(next.ok());
    EXPECT_NE(next.error().message().find("heap overflow"), std::string::npos) << next.error().message();
}

TEST_F(CheckedMemoryNoQuarantine, AWriteWithinTheBufferLeavesItsGuardIntact) {
    Stream s = stream();
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool other, MemoryPool::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream foreign, Stream::create(other));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer a, Buffer::allocate(s, 1000));
    KEEL_ASSERT_OK(foreign.order_after(s));
    KEEL_ASSERT_OK(foreign.memset(a, 0x77));
    KEEL_ASSERT_OK(s.order_after(foreign));
    a.reset();
    KEEL_EXPECT_OK(Buffer::allocate(s, 1000));
}

// ---- no caching ------------------------------------------------------------------

class UncachedMemory : public CheckedMemory {
protected:
    void SetUp() override {
        CheckedMemory::SetUp();
        if (IsSkipped()) return;
        MemoryConfig config;
        config.allocator.caching = false;
        memory_ = std::make_unique<MemoryPool>(MemoryPool::create(device(), config).expect("MemoryPool"));
    }
};

TEST_F(UncachedMemory, EveryBufferIsAPluginAllocation) {
    Stream s = stream();
    for (int i = 0; i < 4; ++i) {
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer a, Buffer::allocate(s, 4096));
        KEEL_ASSERT_OK(s.memset(a, 1));
    }
    const AllocatorStats st = memory().stats();
    EXPECT_EQ(st.raw_allocations, 4u);
    EXPECT_EQ(st.raw_frees, 4u);
    EXPECT_EQ(st.reserved_bytes, 0u);
}

// Without the cache the plugin sees the free itself: freeing a buffer that
// another stream still reads (no record_stream) is refused there and fails
// that stream.
TEST_F(UncachedMemory, AFreeWhileAnotherStreamReadsIsRefusedByThePlugin) {
    Stream s1 = stream(), s2 = stream();
    Gate gate;
    Buffer a, b;
    KEEL_ASSERT_OK(read_on_other_stream(s1, s2, &gate, Record::never, a, b));
    a.reset();  // the bug
    gate.open();
    const Result<void> r = s2.synchronize();
    EXPECT_TRUE(says(r, "late free")) << text(r);
}

TEST_F(UncachedMemory, AFreeAfterRecordStreamWaitsForTheOtherStream) {
    Stream s1 = stream(), s2 = stream();
    Buffer a, b;
    KEEL_ASSERT_OK(read_on_other_stream(s1, s2, nullptr, Record::after_use, a, b));
    a.reset();  // waits for s2's copy, then frees
    KEEL_ASSERT_OK(s2.synchronize());
    EXPECT_EQ(read(s2, b), std::vector<std::uint8_t>(64 * KiB, 0x11));
    EXPECT_EQ(memory().stats().raw_frees, 1u);
}


// Pinned memory and host functions. A host function does not declare what it
// reads, so the checker keeps freed pinned blocks inaccessible while they are
// quarantined: a host function that reads one after its host_free stops the
// program with a diagnostic, whenever it runs.
class CheckedHostFunctions : public CheckedMemory {
protected:
    void SetUp() override {
        GTEST_FLAG_SET(death_test_style, "threadsafe");
        CheckedMemory::SetUp();
    }
    // Frameworks' pattern: a host function reads pinned memory (a result the
    // host wants), an event is recorded before it, the host waits for that
    // event and frees the buffer, thinking the stream is done with it.
    // `free_early` plants the bug; otherwise the host waits for the stream.
    std::uint8_t read_in_host_function(bool free_early) const {
        Stream s = stream();
        PinnedBuffer pinned = PinnedBuffer::allocate(device(), 4096).expect("PinnedBuffer");
        pinned.as<std::uint8_t>()[0] = 42;
        auto seen = std::make_shared<std::atomic<int>>(-1);
        Gate gate;
        Event before = Event::create(device()).expect("Event");
        before.record(s).expect("record");
        gate.hold(s).expect("gate");
        const auto* bytes = static_cast<const volatile std::uint8_t*>(pinned.data());
        s.enqueue_host_func([bytes, seen] { seen->store(bytes[0]); }).expect("host function");
        before.synchronize().expect("event");
        if (free_early) {
            PinnedBuffer freed = std::move(pinned);  // the bug: the host function has not run yet
        }
        gate.open();
        s.synchronize().expect("synchronize");
        return static_cast<std::uint8_t>(seen->load());
    }
};

TEST_F(CheckedHostFunctions, AHostFunctionReadingPinnedMemoryFreedBeforeItRanStopsTheProgram) {
    EXPECT_DEATH((void)read_in_host_function(/*free_early=*/true),
                 "use after free of pinned memory: allocation #[0-9]+ .* was freed by host_free and then "
                 "touched at 0x[0-9a-f]+ by a host function of stream [0-9]+");
}

TEST_F(CheckedHostFunctions, AHostFunctionReadingPinnedMemoryBeforeItsFreePasses) {
    EXPECT_EQ(read_in_host_function(/*free_early=*/false), 42);
}


// The environment overrides the code's configuration field by field, and
// config() reports what is in effect (README.md, "Settings").
TEST(CheckedMemoryConfig, ConfigReportsTheCheckedModeTheEnvironmentTurnedOn) {
    auto d = runtime().device("cpu:0");
    if (!d.ok()) GTEST_SKIP() << "no cpu:0: " << d.error().message();
    MemoryConfig unchecked;
    unchecked.allocator.checked = false;
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool memory, MemoryPool::create(*d, unchecked));
    EXPECT_TRUE(memory.config().allocator.checked) << "KEEL_CHECK=1 is set for this process";
}

TEST(CheckedMemoryConfig, AnInvalidKeelCheckIsAnErrorNamingTheVariable) {
    auto d = runtime().device("cpu:0");
    if (!d.ok()) GTEST_SKIP() << "no cpu:0: " << d.error().message();
    testing::ScopedEnv two("KEEL_CHECK", "2");
    auto memory = MemoryPool::create(*d, MemoryConfig{});
    ASSERT_FALSE(memory.ok());
    EXPECT_EQ(memory.error().code(), KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(memory.error().message().find("KEEL_CHECK='2': expected 1|0|on|off"), std::string::npos)
        << memory.error().message();
}

}  // namespace
}  // namespace keel
