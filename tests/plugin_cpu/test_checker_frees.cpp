// Late frees under happens-before checking: a free that the host issues
// before it KNOWS every use of the memory completed is refused, whether or
// not the use happens to have run already. The memory stays allocated and
// owned by the caller (a failed call has no effect), so freeing it again
// once the use is known complete releases it: nothing leaks.
#include "checked_session.hpp"

#include <thread>

namespace keel::cpu::testing {
namespace {

TEST(CheckerFrees, FreeingMemoryAKernelOnAnotherStreamUsesIsRefusedAndStickyOnThatStream) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream host_side = t.stream(), compute = t.stream();
        keel_device_addr x = t.alloc(kBytes);
        ASSERT_FALSE(t.fill(compute, x, kBytes, 1.0f));
        KEEL_ASSERT_OK(t.api().memset_d8(host_side, t.alloc(64), 0, 64));
        KEEL_ASSERT_OK(t.api().stream_synchronize(host_side));  // knows its own stream, not `compute`
        auto e = take(t.api().device_free(t.dev(), x));
        expect_finding(e, KEEL_STATUS_FAILED_PRECONDITION,
                       {"[cpu device_free] late free: device allocation #1", "kernel fill #1 on stream 2",
                        "(which writes bytes 0..4096, its out)", "did not synchronize with stream 2",
                        "the memory stays allocated"});
        expect_finding(take(t.api().stream_synchronize(compute)), KEEL_STATUS_FAILED_PRECONDITION,
                       {"late free: device allocation #1"});
        KEEL_EXPECT_OK(t.api().stream_synchronize(host_side));  // not involved
        // The synchronize above told the host: the memory can go now.
        KEEL_EXPECT_OK(t.api().device_free(t.dev(), x));
        t.forget_allocation(x);
    }
}

TEST(CheckerFrees, FreeingMemoryAfterWaitingForTheKernelsEventIsClean) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream compute = t.stream();
        keel_event done = t.event();
        keel_device_addr x = t.alloc(kBytes);
        ASSERT_FALSE(t.fill(compute, x, kBytes, 1.0f));
        KEEL_ASSERT_OK(t.api().event_record(done, compute));
        KEEL_ASSERT_OK(t.api().event_synchronize(done));
        KEEL_EXPECT_OK(t.api().device_free(t.dev(), x));
        t.forget_allocation(x);
        KEEL_EXPECT_OK(t.api().stream_synchronize(compute));
        EXPECT_TRUE(t.error_logs().empty());
    }
}

// Deterministic: the kernel has long run, but the host never learned it.
TEST(CheckerFrees, AFreeIsLateWhenTheHostNeverLearnedTheUseCompletedEvenIfItDid) {
    CheckedSession t(ScopedEnv::Vars{{"KEEL_CPU_CHECK", "1"}});
    keel_stream compute = t.stream();
    keel_device_addr x = t.alloc(kBytes);
    ASSERT_FALSE(t.fill(compute, x, kBytes, 1.0f));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    expect_finding(take(t.api().device_free(t.dev(), x)), KEEL_STATUS_FAILED_PRECONDITION,
                   {"late free: device allocation #1", "kernel fill #1 on stream 1"});
}

TEST(CheckerFrees, FreeingPinnedMemoryACopyStillReadsIsRefused) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream s = t.stream();
        keel_device_addr d = t.alloc(kBytes);
        void* staging = t.pinned(kBytes);
        std::memset(staging, 7, kBytes);
        KEEL_ASSERT_OK(t.api().memcpy_h2d(s, d, staging, kBytes));
        expect_finding(take(t.api().host_free(t.dev(), staging)), KEEL_STATUS_FAILED_PRECONDITION,
                       {"[cpu host_free] late free: pinned allocation #2", "memcpy_h2d #1 on stream 1",
                        "(which reads bytes 0..4096, its source)"});
        expect_finding(take(t.api().stream_synchronize(s)), KEEL_STATUS_FAILED_PRECONDITION, {"late free"});
        KEEL_EXPECT_OK(t.api().host_free(t.dev(), staging));  // known complete now
        t.forget_pinned(staging);
    }
}

TEST(CheckerFrees, FreeingPinnedMemoryAfterItsCopyIsKnownCompleteIsClean) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream s = t.stream();
        keel_device_addr d = t.alloc(kBytes);
        void* staging = t.pinned(kBytes);
        std::memset(staging, 7, kBytes);
        KEEL_ASSERT_OK(t.api().memcpy_h2d(s, d, staging, kBytes));
        KEEL_ASSERT_OK(t.api().stream_synchronize(s));
        KEEL_EXPECT_OK(t.api().host_free(t.dev(), staging));
        t.forget_pinned(staging);
        EXPECT_TRUE(t.error_logs().empty());
    }
}

// --- a free from another host thread while the kernel runs ----------------------

TEST(CheckerFrees, AFreeFromAnotherThreadWhileTheKernelIsInFlightIsRefused) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream compute = t.stream();
        keel_device_addr x = t.alloc(kBytes);
        Gate* gate = t.block(compute);  // the kernel is held "mid-flight"
        ASSERT_FALSE(t.fill(compute, x, kBytes, 1.0f));
        std::optional<CError> freed;
        std::thread other([&] { freed = take(t.api().device_free(t.dev(), x)); });
        other.join();
        gate->open();
        expect_finding(freed, KEEL_STATUS_FAILED_PRECONDITION,
                       {"late free: device allocation #1", "kernel fill #2 on stream 1"});
        expect_finding(take(t.api().stream_synchronize(compute)), KEEL_STATUS_FAILED_PRECONDITION, {"late free"});
    }
}

TEST(CheckerFrees, AFreeFromAnotherThreadAfterItWaitedForTheKernelIsClean) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream compute = t.stream();
        keel_event done = t.event();
        keel_device_addr x = t.alloc(kBytes);
        Gate* gate = t.block(compute);
        ASSERT_FALSE(t.fill(compute, x, kBytes, 1.0f));
        KEEL_ASSERT_OK(t.api().event_record(done, compute));
        std::optional<CError> synced, freed;
        std::thread other([&] {
            synced = take(t.api().event_synchronize(done));  // blocks until the gate opens
            freed = take(t.api().device_free(t.dev(), x));
        });
        gate->open();
        other.join();
        EXPECT_FALSE(synced) << synced->message;
        EXPECT_FALSE(freed) << freed->message;
        t.forget_allocation(x);
        KEEL_EXPECT_OK(t.api().stream_synchronize(compute));
        EXPECT_TRUE(t.error_logs().empty());
    }
}

// What one host thread learns orders what every host thread does next (one
// host clock): a free on thread B after thread A synchronized is clean.
TEST(CheckerFrees, WhatOneHostThreadLearnedCountsForEveryThread) {
    CheckedSession t(ScopedEnv::Vars{{"KEEL_CPU_CHECK", "1"}, {"KEEL_CPU_DELAY", "random:200"}});
    keel_stream compute = t.stream();
    keel_device_addr x = t.alloc(kBytes);
    ASSERT_FALSE(t.fill(compute, x, kBytes, 1.0f));
    std::thread([&] { KEEL_EXPECT_OK(t.api().stream_synchronize(compute)); }).join();
    KEEL_EXPECT_OK(t.api().device_free(t.dev(), x));
    t.forget_allocation(x);
}

// A refused free leaks nothing: the caller still owns the memory.
TEST(CheckerFrees, AfterARefusedFreeTheMemoryIsStillUsableAndFreedLater) {
    CheckedSession t(ScopedEnv::Vars{{"KEEL_CPU_CHECK", "1"}});
    keel_stream a = t.stream(), b = t.stream();
    keel_device_addr x = t.alloc(kBytes);
    ASSERT_FALSE(t.fill(a, x, kBytes, 4.0f));
    ASSERT_TRUE(take(t.api().device_free(t.dev(), x)));
    (void)take(t.api().stream_synchronize(a));  // reports the finding, and tells the host
    EXPECT_EQ(t.read_f32(b, x, kBytes / 4), std::vector<float>(kBytes / 4, 4.0f));
    KEEL_EXPECT_OK(t.api().device_free(t.dev(), x));
    t.forget_allocation(x);
    uint64_t free = 0, total = 0;
    KEEL_ASSERT_OK(t.api().device_memory_info(t.dev(), &free, &total));
    EXPECT_EQ(free, total);
}

}  // namespace
}  // namespace keel::cpu::testing
