// Errors travel with the work that depends on them (keel.h, "ABI 1.3:
// error propagation"). A stream is broken by a copy past the end of a raw
// allocation, which a plugin either refuses at enqueue (then there is no
// asynchronous failure to propagate, and the test skips saying so) or
// fails while the copy executes; and, on every plugin with 1.4's fallible
// host functions, by a host function that fails its stream.
#include "conformance.hpp"

#include <keel/raw_buffer.hpp>

#include <atomic>
#include <string>

namespace keel::conformance {
namespace {

TEST_P(Conformance, AStreamWaitingOnAnEventRecordedAfterAFailureFailsToo) {
    KEEL_RULE(3, "error-propagation.across-waits");
    KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer small, RawBuffer::allocate(device(), 64));
    const Bytes past_the_end(4096, 1);  // what the producer's work reads: declared before it
    KEEL_ASSERT_OK_AND_ASSIGN(Stream producer, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream consumer, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer out, Buffer::allocate(consumer, 64));
    KEEL_ASSERT_OK_AND_ASSIGN(Event after, Event::create(device()));
    // Held until the event is recorded: a stream already known to have
    // failed refuses the record.
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(producer));
    auto broken = producer.copy(DeviceView(device(), small.address(), past_the_end.size()), past_the_end);
    if (!broken.ok())
        GTEST_SKIP() << device().name() << " refuses an out-of-range copy at enqueue (" << broken.error().message()
                     << "): no asynchronous failure to propagate";
    KEEL_ASSERT_OK(after.record(producer));
    gate.open();
    auto producer_failed = producer.synchronize();
    ASSERT_FALSE(producer_failed.ok()) << "the out-of-range copy did not fail the producer";
    KEEL_ASSERT_OK(consumer.wait(after));
    (void)consumer.memset(out, 2);  // refused once the consumer already failed
    auto consumer_failed = consumer.synchronize();
    ASSERT_FALSE(consumer_failed.ok()) << "the consumer went on over data its producer never wrote";
    EXPECT_EQ(consumer_failed.error().code(), producer_failed.error().code());
}

TEST_P(Conformance, AStreamWaitingOnAFailedHostFunctionsStreamFailsToo) {
    KEEL_RULE(4, "host-func.fallible");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream producer, Stream::create(device()));
    if (!producer.host_funcs_can_fail())
        GTEST_SKIP() << device().name() << " has no stream_enqueue_fallible_host_func (optional)";
    KEEL_ASSERT_OK_AND_ASSIGN(Stream consumer, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer out, Buffer::allocate(consumer, 64));
    KEEL_ASSERT_OK_AND_ASSIGN(Event after, Event::create(device()));
    // Held until the event is recorded: a stream already known to have
    // failed refuses the record.
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(producer));
    KEEL_ASSERT_OK(producer.enqueue_host_func(
        []() -> Result<void> { return Error(KEEL_STATUS_UNAVAILABLE, "planted producer failure 5150"); }));
    KEEL_ASSERT_OK(after.record(producer));
    KEEL_ASSERT_OK(consumer.wait(after));
    gate.open();
    (void)consumer.memset(out, 2);  // refused once the consumer already failed
    auto consumer_failed = consumer.synchronize();
    ASSERT_FALSE(consumer_failed.ok()) << "the consumer went on over data its producer never wrote";
    EXPECT_EQ(consumer_failed.error().code(), KEEL_STATUS_UNAVAILABLE);
    EXPECT_NE(consumer_failed.error().message().find("planted producer failure 5150"), std::string::npos)
        << consumer_failed.error().message();
    EXPECT_FALSE(producer.synchronize().ok());
}

}  // namespace
}  // namespace keel::conformance
