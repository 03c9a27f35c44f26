// Errors travel along waits on Level Zero (keel.h 1.3, error propagation):
// a stream that waits on an event recorded after a failure of another
// stream fails too, with the original error quoted, whether the failure
// came before the wait was enqueued or while the wait was queued; work and
// events of the waiting stream before the wait are not its victims. The
// producer is failed by an injected zeEventHostSignal failure of a host
// function's slot (a failure found while its work runs).
#include "fake_fixture.hpp"

#include <string>

namespace keel::level_zero_test {
namespace {

constexpr std::size_t kProducedBytes = 4096;

// A producer stream whose work after a gate fails once the gate opens,
// with an event recorded after the failing point.
struct FailingProducer {
    FailingProducer(const keel_plugin_api& api, keel_device device) : api_(api), device_(device) {
        KEEL_EXPECT_OK(api.stream_create(device, 0, &stream));
        KEEL_EXPECT_OK(api.device_alloc(device, kProducedBytes, &buf));
        KEEL_EXPECT_OK(api.event_create(device, 0, &after));
        KEEL_EXPECT_OK(gate.hold(api, stream));
        fake_ze_fail_calls("zeEventHostSignal", ZE_RESULT_ERROR_DEVICE_LOST, 0, 1);  // the gate's slot
        KEEL_EXPECT_OK(api.memset_d8(stream, buf, 1, kProducedBytes));
        KEEL_EXPECT_OK(api.event_record(after, stream));
    }
    ~FailingProducer() {
        gate.open();
        (void)take(api_.stream_destroy(stream));
        KEEL_EXPECT_OK(api_.event_destroy(after));
        KEEL_EXPECT_OK(api_.device_free(device_, buf));
    }
    FailingProducer(const FailingProducer&) = delete;
    FailingProducer& operator=(const FailingProducer&) = delete;

    const keel_plugin_api& api_;
    keel_device device_;
    keel_stream stream = nullptr;
    keel_device_addr buf = 0;
    keel_event after = nullptr;
    Gate gate;
};

class ErrorPropagation : public OnFakeDriver {
protected:
    // The consumer's side: an event before the wait, the wait, a memset
    // (refused once the consumer is known to have failed), an event after.
    void consume(keel_stream consumer, keel_device_addr out, keel_event before, keel_event after_wait,
                 keel_event producer_event) {
        KEEL_ASSERT_OK(api().memset_d8(consumer, out, 3, kProducedBytes));
        KEEL_ASSERT_OK(api().event_record(before, consumer));
        KEEL_ASSERT_OK(api().stream_wait_event(consumer, producer_event));
        (void)take(api().memset_d8(consumer, out, 2, kProducedBytes));
        recorded_after_wait_ = outcome(api().event_record(after_wait, consumer));
    }
    void expect_failed_with_the_producers_error(keel_stream consumer, keel_event before, keel_event after_wait) {
        const CError sync = outcome(api().stream_synchronize(consumer));
        EXPECT_EQ(sync.code, KEEL_STATUS_DEVICE_ERROR) << "the consumer went on over data its producer never wrote";
        EXPECT_TRUE(contains(sync.message, "zeEventHostSignal")) << "the original error is quoted: " << sync.message;
        KEEL_EXPECT_OK(api().event_synchronize(before)) << "work before the wait is not the failure's victim";
        // The record itself may be refused (the consumer had failed then);
        // an event it did record reports the failure.
        const CError later = recorded_after_wait_.code != KEEL_STATUS_OK
                                 ? recorded_after_wait_
                                 : outcome(api().event_synchronize(after_wait));
        EXPECT_EQ(later.code, KEEL_STATUS_DEVICE_ERROR) << "an event after the wait: " << later.message;
    }

    CError recorded_after_wait_;
};

TEST_F(ErrorPropagation, AWaitEnqueuedBeforeTheProducerFailsFailsTheWaitingStream) {
    FailingProducer producer(api(), device());
    const keel_stream consumer = new_stream();
    const keel_device_addr out = new_buffer(kProducedBytes);
    keel_event before = nullptr, after_wait = nullptr;
    KEEL_ASSERT_OK(api().event_create(device(), 0, &before));
    KEEL_ASSERT_OK(api().event_create(device(), 0, &after_wait));
    consume(consumer, out, before, after_wait, producer.after);  // the producer is still held: not failed yet
    producer.gate.open();
    EXPECT_EQ(outcome(api().stream_synchronize(producer.stream)).code, KEEL_STATUS_DEVICE_ERROR);
    expect_failed_with_the_producers_error(consumer, before, after_wait);
    (void)take(api().stream_destroy(consumer));
    KEEL_EXPECT_OK(api().event_destroy(before));
    KEEL_EXPECT_OK(api().event_destroy(after_wait));
    KEEL_EXPECT_OK(api().device_free(device(), out));
}

TEST_F(ErrorPropagation, AWaitEnqueuedAfterTheProducerFailedFailsTheWaitingStream) {
    FailingProducer producer(api(), device());
    producer.gate.open();
    EXPECT_EQ(outcome(api().stream_synchronize(producer.stream)).code, KEEL_STATUS_DEVICE_ERROR);
    const keel_stream consumer = new_stream();
    const keel_device_addr out = new_buffer(kProducedBytes);
    keel_event before = nullptr, after_wait = nullptr;
    KEEL_ASSERT_OK(api().event_create(device(), 0, &before));
    KEEL_ASSERT_OK(api().event_create(device(), 0, &after_wait));
    consume(consumer, out, before, after_wait, producer.after);
    expect_failed_with_the_producers_error(consumer, before, after_wait);
    const CError refused = outcome(api().memset_d8(consumer, out, 4, kProducedBytes));
    EXPECT_EQ(refused.code, KEEL_STATUS_DEVICE_ERROR) << "a failed stream refuses work: " << refused.message;
    (void)take(api().stream_destroy(consumer));
    KEEL_EXPECT_OK(api().event_destroy(before));
    KEEL_EXPECT_OK(api().event_destroy(after_wait));
    KEEL_EXPECT_OK(api().device_free(device(), out));
}

TEST_F(ErrorPropagation, AWaitOnAnEventRecordedBeforeTheFailureLeavesTheWaitingStreamHealthy) {
    const keel_stream producer = new_stream();
    const keel_device_addr buf = new_buffer(kProducedBytes);
    keel_event early = nullptr;
    KEEL_ASSERT_OK(api().event_create(device(), 0, &early));
    Gate gate;
    KEEL_ASSERT_OK(api().memset_d8(producer, buf, 1, kProducedBytes));
    KEEL_ASSERT_OK(api().event_record(early, producer));  // before the failing point
    KEEL_ASSERT_OK(gate.hold(api(), producer));
    fake_ze_fail_calls("zeEventHostSignal", ZE_RESULT_ERROR_DEVICE_LOST, 0, 1);
    KEEL_ASSERT_OK(api().memset_d8(producer, buf, 2, kProducedBytes));
    const keel_stream consumer = new_stream();
    KEEL_ASSERT_OK(api().stream_wait_event(consumer, early));
    gate.open();
    EXPECT_EQ(outcome(api().stream_synchronize(producer)).code, KEEL_STATUS_DEVICE_ERROR);
    KEEL_EXPECT_OK(api().stream_synchronize(consumer)) << "the point waited for came before the failure";
    KEEL_EXPECT_OK(api().stream_destroy(consumer));
    (void)take(api().stream_destroy(producer));
    KEEL_EXPECT_OK(api().event_destroy(early));
    KEEL_EXPECT_OK(api().device_free(device(), buf));
}

}  // namespace
}  // namespace keel::level_zero_test
