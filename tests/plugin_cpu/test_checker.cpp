// Checker mode: each planted asynchronous lifetime bug is caught, and its
// twin doing the right thing passes cleanly. (Happens-before findings:
// test_checker_order.cpp, test_checker_frees.cpp, test_checker_ranges.cpp,
// test_checker_allocator.cpp.)
#include "checked_session.hpp"

#include "poison.hpp"

#include <cstring>

namespace keel::cpu::testing {
namespace {

class CheckerTest : public CpuPluginTest {
protected:
    ScopedEnv::Vars environment() const override { return {{"KEEL_CPU_CHECK", "1"}}; }
    std::vector<std::string> error_logs() const { return logs_at_least(KEEL_LOG_WARN); }
    void fill(keel_stream s, keel_device_addr a, uint64_t bytes, float v) {
        auto e = Handles::fill(s, a, bytes, v);
        ASSERT_FALSE(e) << e->message;
    }
};

// --- 1. host buffer freed before its async copy executes -------------------

TEST_F(CheckerTest, FreeingPinnedMemoryWhileItsCopyIsQueuedIsReportedNamingBoth) {
    keel_stream s = stream();
    keel_device_addr d = alloc(4096);
    void* p = pinned(4096);
    std::memset(p, 1, 4096);
    auto gate = block(s);  // the copy cannot have run yet
    KEEL_ASSERT_OK(api().memcpy_h2d(s, d, p, 4096));
    auto e = take(api().host_free(dev(), p));
    ASSERT_TRUE(e) << "late free not caught";
    EXPECT_EQ(e->code, KEEL_STATUS_FAILED_PRECONDITION);
    EXPECT_TRUE(contains(e->message, "[cpu host_free] late free: pinned allocation #")) << e->message;
    EXPECT_TRUE(contains(e->message, "memcpy_h2d #2 on stream")) << e->message;
    gate->open();
    // The finding is sticky on the copy's stream; the refused free kept the memory valid.
    auto synced = take(api().stream_synchronize(s));
    ASSERT_TRUE(synced);
    EXPECT_TRUE(contains(synced->message, "late free: pinned allocation #")) << synced->message;
    KEEL_EXPECT_OK(api().host_free(dev(), p));  // now ordered after the copy: freed, no leak
    forget_pinned(p);
}

TEST_F(CheckerTest, FreeingPinnedMemoryAfterItsCopyCompletedIsClean) {
    keel_stream s = stream();
    keel_device_addr d = alloc(4096);
    void* p = pinned(4096);
    std::memset(p, 1, 4096);
    auto gate = block(s);
    KEEL_ASSERT_OK(api().memcpy_h2d(s, d, p, 4096));
    gate->open();
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    KEEL_EXPECT_OK(api().host_free(dev(), p));
    forget_pinned(p);
    EXPECT_TRUE(error_logs().empty());
}

// In log mode the free goes ahead (and is logged); with a delay the copy
// runs later and reads the poisoned block, which a test can see.
class CheckerLogMode : public CheckerTest {
    ScopedEnv::Vars environment() const override {
        return {{"KEEL_CPU_CHECK", "1"}, {"KEEL_CPU_LATE_FREE", "log"}, {"KEEL_CPU_CHECK_HOST_SOURCES", "0"},
                {"KEEL_CPU_GUARD", "0"}, {"KEEL_CPU_DELAY_US", "100000"}};
    }
};

TEST_F(CheckerLogMode, APinnedSourceFreedEarlyIsLoggedAndTheCopyReadsPoison) {
    keel_stream s = stream();
    keel_device_addr d = alloc(64);
    void* p = pinned(64);
    std::memset(p, 1, 64);
    KEEL_ASSERT_OK(api().memcpy_h2d(s, d, p, 64));  // held back 100 ms by the delay
    KEEL_ASSERT_OK(api().host_free(dev(), p));      // the bug
    forget_pinned(p);
    std::vector<uint8_t> back(64);
    KEEL_ASSERT_OK(api().memcpy_d2h(s, back.data(), d, 64));
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    for (uint8_t b : back) ASSERT_EQ(b, poison::kFreedPinnedByte);
    // Reported twice: at the free (naming the pending copy) and when the copy ran.
    auto logs = error_logs();
    ASSERT_EQ(logs.size(), 2u);
    EXPECT_TRUE(contains(logs[0], "late free: pinned allocation")) << logs[0];
    EXPECT_TRUE(contains(logs[0], "memcpy_h2d #1 on stream 1")) << logs[0];
    EXPECT_TRUE(contains(logs[1], "memcpy_h2d #1 on stream 1 runs after its pinned allocation")) << logs[1];
}

TEST_F(CheckerLogMode, ADeviceBufferFreedEarlyIsReadAsPoisonWhenUnguarded) {
    keel_stream s = stream();
    keel_device_addr d = alloc(64);
    KEEL_ASSERT_OK(api().memset_d8(s, d, 7, 64));
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    std::vector<uint32_t> back(16, 0);
    KEEL_ASSERT_OK(api().memcpy_d2h(s, back.data(), d, 64));  // delayed
    KEEL_ASSERT_OK(api().device_free(dev(), d));              // the bug (logged)
    forget_allocation(d);
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    for (uint32_t w : back) ASSERT_EQ(w, poison::kFreedDeviceWord);
    ASSERT_EQ(error_logs().size(), 1u);
}

// --- 2. device buffer freed while a kernel on another stream uses it -------

TEST_F(CheckerTest, FreeingDeviceMemoryAKernelOnAnotherStreamStillUsesIsReported) {
    keel_stream producer = stream();
    keel_stream consumer = stream();
    keel_device_addr x = alloc(1024);
    auto gate = block(consumer);
    fill(consumer, x, 1024, 1.0f);
    auto e = take(api().device_free(dev(), x));  // freed from the host, "done" with it on `producer`'s view
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_FAILED_PRECONDITION);
    EXPECT_TRUE(contains(e->message, "late free: device allocation #")) << e->message;
    EXPECT_TRUE(contains(e->message, "kernel fill #2 on stream 2")) << e->message;
    gate->open();
    auto synced = take(api().stream_synchronize(consumer));
    ASSERT_TRUE(synced) << "the late free is sticky on the stream that used the memory";
    EXPECT_EQ(synced->code, KEEL_STATUS_FAILED_PRECONDITION);
    KEEL_EXPECT_OK(api().stream_synchronize(producer));  // not involved
    KEEL_EXPECT_OK(api().device_free(dev(), x));         // ordered now: freed, no leak
    forget_allocation(x);
}

TEST_F(CheckerTest, FreeingDeviceMemoryAfterWaitingForTheKernelsEventIsClean) {
    keel_stream consumer = stream();
    keel_event done = event();
    keel_device_addr x = alloc(1024);
    auto gate = block(consumer);
    fill(consumer, x, 1024, 1.0f);
    KEEL_ASSERT_OK(api().event_record(done, consumer));
    gate->open();
    KEEL_ASSERT_OK(api().event_synchronize(done));
    KEEL_EXPECT_OK(api().device_free(dev(), x));
    forget_allocation(x);
    EXPECT_TRUE(error_logs().empty());
}

class CheckerGuardedLogMode : public CheckerTest {
    ScopedEnv::Vars environment() const override { return {{"KEEL_CPU_CHECK", "1"}, {"KEEL_CPU_LATE_FREE", "log"}}; }
};

TEST_F(CheckerGuardedLogMode, AKernelRunningAfterItsBufferWasFreedFailsItsStreamNamingAddressOpAndStream) {
    keel_stream s = stream();
    keel_device_addr x = alloc(1024);
    auto gate = block(s);
    fill(s, x, 1024, 1.0f);
    KEEL_ASSERT_OK(api().device_free(dev(), x));  // logged, goes ahead
    forget_allocation(x);
    gate->open();
    auto e = take(api().stream_synchronize(s));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_OUT_OF_RANGE);
    EXPECT_TRUE(contains(e->message, "[cpu fill] stream 1")) << e->message;
    EXPECT_TRUE(contains(e->message, "use after free")) << e->message;
    char addr[32];
    std::snprintf(addr, sizeof addr, "0x%016llx", static_cast<unsigned long long>(x));
    EXPECT_TRUE(contains(e->message, addr)) << e->message;
}

// --- 3. pinned buffer reused before its copy completes ---------------------

TEST_F(CheckerTest, ReusingAStagingBufferBeforeItsCopyRanIsReportedAtSynchronize) {
    keel_stream s = stream();
    keel_device_addr d = alloc(256);
    auto* staging = static_cast<uint8_t*>(pinned(256));
    std::memset(staging, 1, 256);
    auto gate = block(s);
    KEEL_ASSERT_OK(api().memcpy_h2d(s, d, staging, 256));
    std::memset(staging, 2, 256);  // the bug: next batch written while copy 1 is pending
    gate->open();
    auto e = take(api().stream_synchronize(s));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_DEVICE_ERROR);
    EXPECT_TRUE(contains(e->message, "changed between enqueue and execution")) << e->message;
    EXPECT_TRUE(contains(e->message, "[cpu memcpy_h2d] stream 1")) << e->message;
}

TEST_F(CheckerTest, ReusingAStagingBufferAfterItsCopyEventIsClean) {
    keel_stream s = stream();
    keel_event copied = event();
    keel_device_addr d = alloc(256);
    auto* staging = static_cast<uint8_t*>(pinned(256));
    std::memset(staging, 1, 256);
    auto gate = block(s);
    KEEL_ASSERT_OK(api().memcpy_h2d(s, d, staging, 256));
    KEEL_ASSERT_OK(api().event_record(copied, s));
    gate->open();
    KEEL_ASSERT_OK(api().event_synchronize(copied));
    std::memset(staging, 2, 256);
    std::vector<uint8_t> back(256);
    KEEL_ASSERT_OK(api().memcpy_d2h(s, back.data(), d, 256));
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    EXPECT_EQ(back, std::vector<uint8_t>(256, 1));
}

TEST_F(CheckerTest, ADeviceToHostToDeviceRoundTripThroughOneBufferIsNotAFalseAlarm) {
    keel_stream s = stream();
    keel_device_addr a = alloc(128), b = alloc(128);
    std::vector<uint8_t> host(128, 0);
    KEEL_ASSERT_OK(api().memset_d8(s, a, 9, 128));
    KEEL_ASSERT_OK(api().memcpy_d2h(s, host.data(), a, 128));  // pending write into host
    KEEL_ASSERT_OK(api().memcpy_h2d(s, b, host.data(), 128));  // reads it after, in stream order
    std::vector<uint8_t> back(128);
    KEEL_ASSERT_OK(api().memcpy_d2h(s, back.data(), b, 128));
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    EXPECT_EQ(back, std::vector<uint8_t>(128, 9));
}

// --- 4. out-of-bounds copy ---------------------------------------------------

TEST_F(CheckerTest, AnOutOfBoundsCopyIsRefusedAtEnqueueFailsItsStreamAndCorruptsNothing) {
    keel_stream s = stream();
    keel_device_addr a = alloc(256), neighbour = alloc(256);
    KEEL_ASSERT_OK(api().memset_d8(s, neighbour, 0x33, 256));
    std::vector<uint8_t> big(1024, 0xEE);
    auto e = take(api().memcpy_h2d(s, a + 128, big.data(), 1024));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_OUT_OF_RANGE);
    EXPECT_TRUE(contains(e->message, "[cpu memcpy_h2d] out of range: memcpy_h2d #2 on stream 1: destination"))
        << e->message;
    EXPECT_TRUE(contains(e->message, "runs past the end of allocation #1")) << e->message;
    e = take(api().stream_synchronize(s));  // sticky
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_OUT_OF_RANGE);
    keel_stream t = stream();
    std::vector<uint8_t> back(256);
    KEEL_ASSERT_OK(api().memcpy_d2h(t, back.data(), neighbour, 256));
    KEEL_ASSERT_OK(api().stream_synchronize(t));
    EXPECT_EQ(back, std::vector<uint8_t>(256, 0x33));
}

TEST_F(CheckerTest, AnInBoundsCopyAtTheEndOfAnAllocationIsClean) {
    keel_stream s = stream();
    keel_device_addr a = alloc(256);
    std::vector<uint8_t> src(128, 0xEE), back(128);
    KEEL_ASSERT_OK(api().memcpy_h2d(s, a + 128, src.data(), 128));
    KEEL_ASSERT_OK(api().memcpy_d2h(s, back.data(), a + 128, 128));
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    EXPECT_EQ(back, src);
}

// --- 5. use of a freed device address -----------------------------------------

TEST_F(CheckerTest, UsingAFreedAddressIsReportedEvenAfterNewAllocations) {
    keel_stream s = stream();
    keel_device_addr old = alloc(512);
    KEEL_ASSERT_OK(api().device_free(dev(), old));
    forget_allocation(old);
    keel_device_addr fresh = alloc(512);
    EXPECT_NE(fresh, old) << "guarded mode must not reuse a freed address";
    auto e = take(api().memset_d8(s, old, 1, 512));  // refused at enqueue
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_OUT_OF_RANGE);
    EXPECT_TRUE(contains(e->message, "[cpu memset_d8] use after free: memset_d8 #1 on stream 1: destination"))
        << e->message;
    EXPECT_TRUE(contains(e->message, "freed allocation #1")) << e->message;
    e = take(api().stream_synchronize(s));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_OUT_OF_RANGE);
}

// Without happens-before checking the same use is caught when it runs.
class CheckerWithoutRaces : public CheckerTest {
    ScopedEnv::Vars environment() const override { return {{"KEEL_CPU_CHECK", "1"}, {"KEEL_CPU_CHECK_RACES", "0"}}; }
};

TEST_F(CheckerWithoutRaces, UsingAFreedAddressFailsTheStreamWhenItRuns) {
    keel_stream s = stream();
    keel_device_addr old = alloc(512);
    KEEL_ASSERT_OK(api().device_free(dev(), old));
    forget_allocation(old);
    KEEL_ASSERT_OK(api().memset_d8(s, old, 1, 512));
    auto e = take(api().stream_synchronize(s));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_OUT_OF_RANGE);
    EXPECT_TRUE(contains(e->message, "[cpu memset_d8] stream 1: destination")) << e->message;
    EXPECT_TRUE(contains(e->message, "freed allocation #1")) << e->message;
}

TEST_F(CheckerTest, UsingTheLiveAllocationInsteadIsClean) {
    keel_stream s = stream();
    keel_device_addr old = alloc(512);
    KEEL_ASSERT_OK(api().device_free(dev(), old));
    forget_allocation(old);
    keel_device_addr fresh = alloc(512);
    KEEL_ASSERT_OK(api().memset_d8(s, fresh, 1, 512));
    KEEL_EXPECT_OK(api().stream_synchronize(s));
}

TEST_F(CheckerTest, FreshDeviceMemoryIsPoisonedSoReadsBeforeWritesStandOut) {
    keel_stream s = stream();
    keel_device_addr a = alloc(32);
    std::vector<uint8_t> back(32);
    KEEL_ASSERT_OK(api().memcpy_d2h(s, back.data(), a, 32));
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    EXPECT_EQ(back, std::vector<uint8_t>(32, poison::kFreshDeviceByte));
}

// --- delays, fault injection ------------------------------------------------------

class CheckerDelays : public CpuPluginTest {
    ScopedEnv::Vars environment() const override { return {{"KEEL_CPU_DELAY_US", "200000"}}; }
};

TEST_F(CheckerDelays, HoldBackEveryOperationSoTheHostMovesOnFirst) {
    keel_stream s = stream();
    Recorder r;
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(s, &Recorder::fn, r.slot(1)));
    int32_t done = 1;
    KEEL_ASSERT_OK(api().stream_query(s, &done));
    EXPECT_EQ(done, 0);
    EXPECT_TRUE(r.seen().empty());
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    EXPECT_EQ(r.seen(), std::vector<int>{1});
}

// A checker that only delays (or injects faults) does not track ranges: the
// plugin's own launch check must still refuse a buffer past its allocation.
class CheckerDelaysOnly : public CpuPluginTest {
    ScopedEnv::Vars environment() const override { return {{"KEEL_CPU_DELAY", "random:200"}}; }
};

TEST_F(CheckerDelaysOnly, StillRefuseAKernelBufferPastItsAllocationAtLaunch) {
    keel_stream s = stream();
    keel_device_addr x = alloc(16);
    auto e = fill(s, x, 1024, 1.0f);
    ASSERT_TRUE(e) << "a 1024-byte buffer over a 16-byte allocation was enqueued";
    EXPECT_EQ(e->code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(e->message, "[fill] buffer argument (out)")) << e->message;
    KEEL_EXPECT_OK(api().stream_synchronize(s)) << "the refused launch failed its stream";
}

class CheckerAllocFaults : public CpuPluginTest {
    ScopedEnv::Vars environment() const override { return {{"KEEL_CPU_FAIL_ALLOC_AFTER", "2"}}; }
};

TEST_F(CheckerAllocFaults, FailDeviceAndPinnedAllocationsAfterNSuccesses) {
    alloc(16);
    alloc(16);
    keel_device_addr a = 0;
    auto e = take(api().device_alloc(dev(), 16, &a));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_OUT_OF_MEMORY);
    EXPECT_TRUE(contains(e->message, "injected device allocation failure")) << e->message;
    pinned(16);
    pinned(16);
    void* p = nullptr;
    e = take(api().host_alloc(dev(), 16, &p));
    ASSERT_TRUE(e);
    EXPECT_TRUE(contains(e->message, "injected pinned allocation failure")) << e->message;
}

std::vector<bool> alloc_pattern(const char* seed) {
    LoadedPlugin p(ScopedEnv::Vars{{"KEEL_CPU_FAIL_ALLOC_PROB", "0.5"}, {"KEEL_CPU_SEED", seed}});
    std::vector<bool> failed;
    for (int i = 0; i < 32; ++i) {
        keel_device_addr a = 0;
        auto e = take(p.api().device_alloc(p.device(), 16, &a));
        failed.push_back(e.has_value());
        if (!e) take(p.api().device_free(p.device(), a));
    }
    return failed;
}

TEST(CheckerAllocProbability, FailsASeededRepeatableFractionOfAllocations) {
    auto a = alloc_pattern("7"), b = alloc_pattern("7"), c = alloc_pattern("8");
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    const auto failures = std::count(a.begin(), a.end(), true);
    EXPECT_GT(failures, 4);
    EXPECT_LT(failures, 28);
}

class CheckerOpFaults : public CpuPluginTest {
    ScopedEnv::Vars environment() const override { return {{"KEEL_CPU_FAIL_OP_AFTER", "2"}}; }
};

TEST_F(CheckerOpFaults, FailTheNthOperationAndPutItsStreamInAnErrorState) {
    keel_stream s = stream();
    keel_device_addr a = alloc(16);
    // Held back until everything is enqueued: otherwise the worker may fail
    // the third op before the host function is enqueued, and that enqueue
    // would (rightly) report the stream's error instead.
    Gate* gate = block(s);                         // op 1
    KEEL_ASSERT_OK(api().memset_d8(s, a, 1, 16));  // op 2
    KEEL_ASSERT_OK(api().memset_d8(s, a, 3, 16));  // op 3 fails
    Recorder r;
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(s, &Recorder::fn, r.slot(0)));
    gate->open();
    auto e = take(api().stream_synchronize(s));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_DEVICE_ERROR);
    EXPECT_TRUE(contains(e->message, "[cpu memset_d8] stream 1: injected operation failure")) << e->message;
    EXPECT_EQ(r.statuses(), std::vector<keel_status>{KEEL_STATUS_DEVICE_ERROR});
}

class CheckerOpProbability : public CpuPluginTest {
    ScopedEnv::Vars environment() const override { return {{"KEEL_CPU_FAIL_OP_PROB", "1"}}; }
};

TEST_F(CheckerOpProbability, FailsOperationsWithTheGivenProbability) {
    keel_stream s = stream();
    KEEL_ASSERT_OK(api().memset_d8(s, alloc(16), 1, 16));
    auto e = take(api().stream_synchronize(s));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_DEVICE_ERROR);
    EXPECT_TRUE(contains(e->message, "injected operation failure")) << e->message;
}

}  // namespace
}  // namespace keel::cpu::testing
