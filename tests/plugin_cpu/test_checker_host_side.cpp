// Legal programs around guarded destinations of pending device-to-host
// copies (checker/pending_destinations.cpp) run clean and compute the right
// values: the guard must never stop what stream order makes legal. The
// planted bugs (host reads that stop the program) are tested through the
// runtime in tests/memory/checked_host_test.cpp.
#include "checked_session.hpp"

#include <atomic>

namespace keel::cpu::testing {
namespace {

// A pinned block read back into, then copied from on the same stream
// (a round trip) before the host observed the read-back: the worker reads
// the guarded pages.
TEST(CheckerHostSide, ACopyFromADestinationStillGuardedRunsInStreamOrder) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream s = t.stream();
        keel_device_addr a = t.alloc(kBytes), b = t.alloc(kBytes);
        void* back = t.pinned(kBytes);
        KEEL_ASSERT_OK(t.api().memset_d8(s, a, 0x3C, kBytes));
        KEEL_ASSERT_OK(t.api().memcpy_d2h(s, back, a, kBytes));
        KEEL_ASSERT_OK(t.api().memcpy_h2d(s, b, back, kBytes));
        std::vector<unsigned char> out(kBytes);
        KEEL_ASSERT_OK(t.api().memcpy_d2h(s, out.data(), b, kBytes));
        KEEL_ASSERT_OK(t.api().stream_synchronize(s));
        EXPECT_EQ(out, std::vector<unsigned char>(kBytes, 0x3C));
        EXPECT_EQ(static_cast<unsigned char*>(back)[kBytes - 1], 0x3C);
        EXPECT_TRUE(t.error_logs().empty());
    }
}

// Two pending read-backs into the same pinned block on one stream (the
// second overwrites the first): the block stays guarded until both are
// observed, and holds the second's bytes.
TEST(CheckerHostSide, TwoPendingCopiesIntoOneBlockLeaveTheLastOnesBytes) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream s = t.stream();
        keel_device_addr a = t.alloc(kBytes), b = t.alloc(kBytes);
        auto* back = static_cast<unsigned char*>(t.pinned(kBytes));
        KEEL_ASSERT_OK(t.api().memset_d8(s, a, 1, kBytes));
        KEEL_ASSERT_OK(t.api().memset_d8(s, b, 2, kBytes));
        KEEL_ASSERT_OK(t.api().memcpy_d2h(s, back, a, kBytes));
        KEEL_ASSERT_OK(t.api().memcpy_d2h(s, back, b, kBytes));
        KEEL_ASSERT_OK(t.api().stream_synchronize(s));
        EXPECT_EQ(back[0], 2);
        EXPECT_EQ(back[kBytes - 1], 2);
        EXPECT_TRUE(t.error_logs().empty());
    }
}

void read_first_byte(void* user_data, keel_status) {
    auto* args = static_cast<std::pair<const unsigned char*, std::atomic<int>*>*>(user_data);
    args->second->store(*args->first);
}

// A host function queued before a read-back on the same stream reads the
// previous values from the destination: stream order runs it first.
TEST(CheckerHostSide, AHostFunctionQueuedBeforeTheCopyOnItsStreamMayReadTheDestination) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream s = t.stream();
        keel_device_addr a = t.alloc(kBytes);
        auto* back = static_cast<unsigned char*>(t.pinned(kBytes));
        std::memset(back, 7, kBytes);
        std::atomic<int> seen{0};
        std::pair<const unsigned char*, std::atomic<int>*> args{back + 100, &seen};
        KEEL_ASSERT_OK(t.api().memset_d8(s, a, 9, kBytes));
        KEEL_ASSERT_OK(t.api().stream_enqueue_host_func(s, &read_first_byte, &args));
        KEEL_ASSERT_OK(t.api().memcpy_d2h(s, back, a, kBytes));
        KEEL_ASSERT_OK(t.api().stream_synchronize(s));
        EXPECT_EQ(seen.load(), 7);
        EXPECT_EQ(back[100], 9);
        EXPECT_TRUE(t.error_logs().empty());
    }
}

// An event recorded after the copy, synchronized: the host observed it.
TEST(CheckerHostSide, AnEventSynchronizedAfterTheCopyReleasesItsDestination) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream s = t.stream();
        keel_event done = t.event();
        keel_device_addr a = t.alloc(kBytes);
        auto* back = static_cast<unsigned char*>(t.pinned(kBytes));
        KEEL_ASSERT_OK(t.api().memset_d8(s, a, 5, kBytes));
        KEEL_ASSERT_OK(t.api().memcpy_d2h(s, back, a, kBytes));
        KEEL_ASSERT_OK(t.api().event_record(done, s));
        int32_t finished = 0;
        while (finished == 0) KEEL_ASSERT_OK(t.api().event_query(done, &finished));  // a query starts the work
        EXPECT_EQ(back[0], 5);
        back[0] = 6;  // the host's again
        EXPECT_TRUE(t.error_logs().empty());
    }
}

}  // namespace
}  // namespace keel::cpu::testing
