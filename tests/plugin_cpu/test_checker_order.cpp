// Happens-before checking: races between streams are reported by the
// enqueue that commits them, whatever the timing. Every planted bug and its
// clean twin run under every schedule of checker_runs() (no delay, fixed
// and seeded random delays, poisoning on and off) and must give the same
// answer each time.
#include "checked_session.hpp"

namespace keel::cpu::testing {
namespace {

constexpr size_t kFloats = kBytes / sizeof(float);

// --- a consumer stream that never waits for its producer --------------------

TEST(CheckerRaces, AConsumerThatNeverWaitsForItsProducerIsRefusedAtEnqueue) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        std::vector<float> back(kFloats, -1.0f);  // outlives the session, which drains the streams
        CheckedSession t(run.env);
        keel_stream producer = t.stream(), consumer = t.stream();
        keel_device_addr x = t.alloc(kBytes);
        ASSERT_FALSE(t.fill(producer, x, kBytes, 2.0f));
        // The bug: nothing orders the read after the fill.
        auto e = take(t.api().memcpy_d2h(consumer, back.data(), x, kBytes));
        expect_finding(e, KEEL_STATUS_FAILED_PRECONDITION,
                       {"[cpu memcpy_d2h] race (read after write): memcpy_d2h #1 on stream 2 reads",
                        "(bytes 0..4096 of device allocation #1", "kernel fill #1 on stream 1 writes", "(its out)",
                        "stream 2 is not ordered after it"});
        // Nothing was queued, and the finding is sticky on both streams.
        for (keel_stream s : {producer, consumer}) {
            auto synced = take(t.api().stream_synchronize(s));
            expect_finding(synced, KEEL_STATUS_FAILED_PRECONDITION, {"race (read after write)"});
        }
        EXPECT_EQ(back, std::vector<float>(kFloats, -1.0f));
        ASSERT_EQ(t.error_logs().size(), 1u);
        EXPECT_TRUE(contains(t.error_logs()[0], "race (read after write)"));
    }
}

TEST(CheckerRaces, AConsumerThatWaitsForItsProducersEventIsClean) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream producer = t.stream(), consumer = t.stream();
        keel_event ready = t.event();
        keel_device_addr x = t.alloc(kBytes);
        ASSERT_FALSE(t.fill(producer, x, kBytes, 2.0f));
        KEEL_ASSERT_OK(t.api().event_record(ready, producer));
        KEEL_ASSERT_OK(t.api().stream_wait_event(consumer, ready));
        EXPECT_EQ(t.read_f32(consumer, x, kFloats), std::vector<float>(kFloats, 2.0f));
        KEEL_EXPECT_OK(t.api().stream_synchronize(producer));
        EXPECT_TRUE(t.error_logs().empty());
    }
}

// Kernel arguments carry the intent their kernel declares: two streams
// reading the same x is no race; a kernel reading x before the write that
// produced it is.
TEST(CheckerRaces, AKernelReadingABufferAnotherStreamIsStillWritingIsRefused) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream producer = t.stream(), consumer = t.stream();
        keel_device_addr x = t.alloc(kBytes), y = t.alloc(kBytes);
        ASSERT_FALSE(t.fill(consumer, y, kBytes, 1.0f));
        ASSERT_FALSE(t.fill(producer, x, kBytes, 2.0f));
        auto e = t.axpy(consumer, 3.0f, x, y, kBytes);
        expect_finding(e, KEEL_STATUS_FAILED_PRECONDITION,
                       {"race (read after write): kernel axpy #2 on stream 2 reads", "(its x)",
                        "kernel fill #1 on stream 1 writes"});
    }
}

TEST(CheckerRaces, TwoStreamsReadingTheSameBufferAreClean) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream a = t.stream(), b = t.stream(), init = t.stream();
        keel_device_addr x = t.alloc(kBytes), ya = t.alloc(kBytes), yb = t.alloc(kBytes);
        ASSERT_FALSE(t.fill(init, x, kBytes, 2.0f));
        KEEL_ASSERT_OK(t.api().stream_synchronize(init));  // the host knows x is written
        ASSERT_FALSE(t.fill(a, ya, kBytes, 1.0f));
        ASSERT_FALSE(t.fill(b, yb, kBytes, 5.0f));
        ASSERT_FALSE(t.axpy(a, 3.0f, x, ya, kBytes));  // both read x, neither waits for the other
        ASSERT_FALSE(t.axpy(b, 1.0f, x, yb, kBytes));
        EXPECT_EQ(t.read_f32(a, ya, kFloats), std::vector<float>(kFloats, 7.0f));
        EXPECT_EQ(t.read_f32(b, yb, kFloats), std::vector<float>(kFloats, 7.0f));
        EXPECT_TRUE(t.error_logs().empty());
    }
}

// --- a buffer written on one stream while another stream still reads it -----

TEST(CheckerRaces, OverwritingABufferAnotherStreamStillReadsIsRefusedAtEnqueue) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream writer = t.stream(), reader = t.stream();
        keel_device_addr x = t.alloc(kBytes), copy = t.alloc(kBytes);
        KEEL_ASSERT_OK(t.api().memset_d8(writer, x, 1, kBytes));
        KEEL_ASSERT_OK(t.api().stream_synchronize(writer));
        KEEL_ASSERT_OK(t.api().memcpy_d2d(reader, copy, x, kBytes));  // reads x
        // The bug: the next step's data lands in x before the reader is known done.
        auto e = take(t.api().memset_d8(writer, x + 1024, 2, 64));
        expect_finding(e, KEEL_STATUS_FAILED_PRECONDITION,
                       {"race (write after read): memset_d8 #2 on stream 1 writes",
                        "(bytes 1024..1088 of device allocation #1", "memcpy_d2d #1 on stream 2 reads",
                        "(its source)", "stream 1 is not ordered after it"});
    }
}

TEST(CheckerRaces, OverwritingABufferAfterWaitingForItsReaderIsClean) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        std::vector<uint8_t> got(kBytes);
        CheckedSession t(run.env);
        keel_stream writer = t.stream(), reader = t.stream();
        keel_event read_done = t.event();
        keel_device_addr x = t.alloc(kBytes), copy = t.alloc(kBytes);
        KEEL_ASSERT_OK(t.api().memset_d8(writer, x, 1, kBytes));
        KEEL_ASSERT_OK(t.api().stream_synchronize(writer));
        KEEL_ASSERT_OK(t.api().memcpy_d2d(reader, copy, x, kBytes));
        KEEL_ASSERT_OK(t.api().event_record(read_done, reader));
        KEEL_ASSERT_OK(t.api().stream_wait_event(writer, read_done));
        KEEL_ASSERT_OK(t.api().memset_d8(writer, x, 2, kBytes));
        KEEL_ASSERT_OK(t.api().stream_wait_event(reader, read_done));  // same stream: already ordered
        KEEL_ASSERT_OK(t.api().memcpy_d2h(reader, got.data(), copy, kBytes));
        KEEL_ASSERT_OK(t.api().stream_synchronize(reader));
        EXPECT_EQ(got, std::vector<uint8_t>(kBytes, 1));  // the reader saw the old bytes
        KEEL_EXPECT_OK(t.api().stream_synchronize(writer));
        EXPECT_TRUE(t.error_logs().empty());
    }
}

// A write to bytes nobody else touches is no race, even inside one allocation.
TEST(CheckerRaces, WritesToDisjointRangesOfOneAllocationAreClean) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream a = t.stream(), b = t.stream();
        keel_device_addr x = t.alloc(kBytes);
        KEEL_ASSERT_OK(t.api().memset_d8(a, x, 1, kBytes / 2));
        KEEL_ASSERT_OK(t.api().memset_d8(b, x + kBytes / 2, 2, kBytes / 2));
        KEEL_ASSERT_OK(t.api().memset_d8(a, x + 7, 3, 1));
        KEEL_EXPECT_OK(t.api().stream_synchronize(a));
        KEEL_EXPECT_OK(t.api().stream_synchronize(b));
        EXPECT_TRUE(t.error_logs().empty());
    }
}

// --- an event re-recorded before the waiting stream's wait was enqueued -----

// A wait orders after the event's record at the time the wait is ENQUEUED.
// Re-recorded elsewhere first, the event no longer covers the producer.
TEST(CheckerRaces, AnEventReRecordedElsewhereBeforeTheWaitNoLongerOrdersTheConsumer) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        std::vector<float> back(kFloats);
        CheckedSession t(run.env);
        keel_stream producer = t.stream(), other = t.stream(), consumer = t.stream();
        keel_event ready = t.event();
        keel_device_addr x = t.alloc(kBytes);
        ASSERT_FALSE(t.fill(producer, x, kBytes, 2.0f));
        KEEL_ASSERT_OK(t.api().event_record(ready, producer));
        KEEL_ASSERT_OK(t.api().event_record(ready, other));  // the bug: reused before the wait
        KEEL_ASSERT_OK(t.api().stream_wait_event(consumer, ready));
        auto e = take(t.api().memcpy_d2h(consumer, back.data(), x, kBytes));
        expect_finding(e, KEEL_STATUS_FAILED_PRECONDITION,
                       {"race (read after write): memcpy_d2h #2 on stream 3", "kernel fill #1 on stream 1"});
    }
}

// Re-recorded on the producer after more work, the wait orders after the
// NEW record: the consumer sees the first write and the later one.
TEST(CheckerRaces, AnEventReRecordedOnTheProducerBeforeTheWaitOrdersAfterTheNewRecord) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        std::vector<float> bx(kFloats), by(kFloats);
        CheckedSession t(run.env);
        keel_stream producer = t.stream(), consumer = t.stream();
        keel_event ready = t.event();
        keel_device_addr x = t.alloc(kBytes), y = t.alloc(kBytes);
        Gate* gate = t.block(producer);  // nothing of the producer has run when the wait is enqueued
        ASSERT_FALSE(t.fill(producer, x, kBytes, 2.0f));
        KEEL_ASSERT_OK(t.api().event_record(ready, producer));
        ASSERT_FALSE(t.fill(producer, y, kBytes, 3.0f));
        KEEL_ASSERT_OK(t.api().event_record(ready, producer));  // re-recorded, before the wait
        KEEL_ASSERT_OK(t.api().stream_wait_event(consumer, ready));
        KEEL_ASSERT_OK(t.api().memcpy_d2h(consumer, bx.data(), x, kBytes));
        KEEL_ASSERT_OK(t.api().memcpy_d2h(consumer, by.data(), y, kBytes));  // covered by the new record only
        gate->open();
        KEEL_ASSERT_OK(t.api().stream_synchronize(consumer));
        EXPECT_EQ(bx, std::vector<float>(kFloats, 2.0f));
        EXPECT_EQ(by, std::vector<float>(kFloats, 3.0f));
        EXPECT_TRUE(t.error_logs().empty());
    }
}

// ... while a wait enqueued BEFORE the re-record keeps the old record.
TEST(CheckerRaces, AWaitEnqueuedBeforeTheEventIsReRecordedKeepsTheOldRecord) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        std::vector<float> by(kFloats);
        CheckedSession t(run.env);
        keel_stream producer = t.stream(), other = t.stream(), consumer = t.stream();
        keel_event ready = t.event();
        keel_device_addr x = t.alloc(kBytes), y = t.alloc(kBytes);
        ASSERT_FALSE(t.fill(producer, x, kBytes, 2.0f));
        KEEL_ASSERT_OK(t.api().event_record(ready, producer));
        KEEL_ASSERT_OK(t.api().stream_wait_event(consumer, ready));
        KEEL_ASSERT_OK(t.api().event_record(ready, other));  // reused after the wait: fine
        ASSERT_FALSE(t.fill(producer, y, kBytes, 3.0f));
        EXPECT_EQ(t.read_f32(consumer, x, kFloats), std::vector<float>(kFloats, 2.0f));
        // ... but y was written after the record the consumer waited for.
        auto e = take(t.api().memcpy_d2h(consumer, by.data(), y, kBytes));
        expect_finding(e, KEEL_STATUS_FAILED_PRECONDITION, {"race (read after write)", "kernel fill #2 on stream 1"});
    }
}

// --- the host's knowledge ------------------------------------------------------

// What the host learned (a synchronize, a query that answered done) orders
// everything it enqueues afterwards, on any stream.
TEST(CheckerRaces, WhatTheHostLearnedCompleteOrdersLaterWorkOnEveryStream) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream producer = t.stream(), consumer = t.stream();
        keel_event done = t.event();
        keel_device_addr x = t.alloc(kBytes), y = t.alloc(kBytes);
        ASSERT_FALSE(t.fill(producer, x, kBytes, 2.0f));
        KEEL_ASSERT_OK(t.api().event_record(done, producer));
        int32_t finished = 0;
        while (finished == 0) KEEL_ASSERT_OK(t.api().event_query(done, &finished));
        ASSERT_FALSE(t.fill(producer, y, kBytes, 3.0f));
        for (finished = 0; finished == 0;) KEEL_ASSERT_OK(t.api().stream_query(producer, &finished));
        EXPECT_EQ(t.read_f32(consumer, x, kFloats), std::vector<float>(kFloats, 2.0f));
        EXPECT_EQ(t.read_f32(consumer, y, kFloats), std::vector<float>(kFloats, 3.0f));
        EXPECT_TRUE(t.error_logs().empty());
    }
}

// A race is reported the same whether the racing write already ran or not:
// the checker judges the order of the calls, not the timing.
TEST(CheckerRaces, ARaceIsReportedEvenWhenTheEarlierWriteHasLongCompleted) {
    std::vector<float> back(kFloats);
    CheckedSession t(ScopedEnv::Vars{{"KEEL_CPU_CHECK", "1"}});
    keel_stream producer = t.stream(), consumer = t.stream();
    keel_device_addr x = t.alloc(kBytes);
    ASSERT_FALSE(t.fill(producer, x, kBytes, 2.0f));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // it has run; nobody said so
    expect_finding(take(t.api().memcpy_d2h(consumer, back.data(), x, kBytes)), KEEL_STATUS_FAILED_PRECONDITION,
                   {"race (read after write)"});
}

// --- the abort mode of CI ---------------------------------------------------------

TEST(CheckerRacesDeathTest, WithCheckAbortAFindingPrintsItsDiagnosticAndAborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    auto planted_race = [] {
        std::vector<float> back(kFloats);
        CheckedSession t(ScopedEnv::Vars{{"KEEL_CPU_CHECK", "abort"}});
        keel_stream producer = t.stream(), consumer = t.stream();
        keel_device_addr x = t.alloc(kBytes);
        (void)t.fill(producer, x, kBytes, 2.0f);
        (void)take(t.api().memcpy_d2h(consumer, back.data(), x, kBytes));
    };
    EXPECT_DEATH(planted_race(), "race \\(read after write\\): memcpy_d2h #1 on stream 2(.|\n)*KEEL_CPU_CHECK=abort");
}

TEST(CheckerRaces, WithCheckAbortACleanProgramRunsToTheEnd) {
    CheckedSession t(ScopedEnv::Vars{{"KEEL_CPU_CHECK", "abort"}});
    keel_stream producer = t.stream(), consumer = t.stream();
    keel_event ready = t.event();
    keel_device_addr x = t.alloc(kBytes);
    ASSERT_FALSE(t.fill(producer, x, kBytes, 2.0f));
    KEEL_ASSERT_OK(t.api().event_record(ready, producer));
    KEEL_ASSERT_OK(t.api().stream_wait_event(consumer, ready));
    EXPECT_EQ(t.read_f32(consumer, x, kFloats), std::vector<float>(kFloats, 2.0f));
}

}  // namespace
}  // namespace keel::cpu::testing
