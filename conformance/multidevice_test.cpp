// Several devices of one plugin (keel.h 1.6, "several devices"): peer
// copies where the plugin declares them, waits across its devices where it
// declares them, and memory of another device refused everywhere else.
// Each check needs a second device of the same plugin (cpu:1 with
// KEEL_CPU_DEVICES=2, the fake Level Zero driver's second GPU) and is
// skipped, saying so, without one.
#include "conformance.hpp"

#include <keel/plugin_table.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace keel::conformance {
namespace {

// Another device of the plugin of `device`, or null.
const Device* sibling_of(const Device& device) {
    for (const Device& d : runtime().devices())
        if (d.type() == device.type() && d != device) return &d;
    return nullptr;
}

#define KEEL_SIBLING_OR_SKIP(var)                                                                       \
    const Device* var = sibling_of(device());                                                           \
    if (var == nullptr) GTEST_SKIP() << device().name() << " is the only device of its plugin here"

TEST_P(Conformance, PeerCopiesMoveBytesBetweenTwoDevicesOfThePlugin) {
    KEEL_RULE(6, "multidev.peer-copy");
    KEEL_SIBLING_OR_SKIP(other);
    if (copy_path(device(), *other) != CopyPath::peer)
        GTEST_SKIP() << device().name() << " -> " << other->name()
                     << ": no peer copy declared (optional: KEEL_DEVICE_CAP_PEER_COPY, device_can_copy_peer)";
    const Bytes in = pattern(65536 + 3, 1);
    KEEL_ASSERT_OK_AND_ASSIGN(Stream mine, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream theirs, Stream::create(*other));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer src, Buffer::allocate(mine, in.size()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer dst, Buffer::allocate(theirs, in.size()));
    KEEL_ASSERT_OK(mine.copy(src, in));
    KEEL_ASSERT_OK(mine.synchronize());
    KEEL_ASSERT_OK(theirs.memset(dst, 0));
    KEEL_ASSERT_OK(theirs.copy(dst.view(), src.view()));  // the stream of the destination
    KEEL_ASSERT_OK_AND_ASSIGN(Bytes out, read_bytes(theirs, dst));
    EXPECT_EQ(out, in);
    KEEL_ASSERT_OK(mine.memset(src, 0));
    KEEL_ASSERT_OK(theirs.synchronize());
    KEEL_ASSERT_OK(mine.copy(src.view(), dst.view()));  // back, on the stream of the destination
    KEEL_ASSERT_OK_AND_ASSIGN(Bytes back, read_bytes(mine, src));
    EXPECT_EQ(back, in);
}

TEST_P(Conformance, PeerCopiesRefuseAStreamOfNeitherDevice) {
    KEEL_RULE(6, "multidev.peer-copy");
    KEEL_SIBLING_OR_SKIP(other);
    const keel_plugin_api& api = plugin_table(device());
    if (plugin_minor() < 6 || api.memcpy_peer == nullptr) GTEST_SKIP() << "memcpy_peer absent (optional)";
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer a, RawBuffer::allocate(device(), 256));
    KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer b, RawBuffer::allocate(device(), 256));
    const keel_device d = plugin_handle(device());
    keel_error* same = api.memcpy_peer(plugin_handle(s), d, a.address(), d, b.address(), 256);
    ASSERT_NE(same, nullptr) << "dst_device == src_device was accepted";
    EXPECT_EQ(same->code, KEEL_STATUS_INVALID_ARGUMENT) << same->message;
    keel_error_destroy(same);
    KEEL_EXPECT_OK(s.synchronize());
}

TEST_P(Conformance, MemoryOfAnotherDeviceIsNeverReadSilently) {
    KEEL_RULE_WHERE_IT_CAN_TELL(6, "multidev.foreign-memory");
    KEEL_SIBLING_OR_SKIP(other);
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer mine, Buffer::allocate(s, 256));
    KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer theirs, RawBuffer::allocate(*other, 256));
    // A view that claims this device for the other device's memory.
    const DeviceView lie(device(), theirs.address(), 256);
    Result<void> r = s.copy(mine.view(), lie);
    if (r.ok()) r = s.synchronize();
    KEEL_ADVISE_UNLESS(!r.ok()) << "a copy on " << device().name() << " from memory of " << other->name()
                                << " was accepted and ran";
    EXPECT_TRUE(r.error().code() == KEEL_STATUS_OUT_OF_RANGE || r.error().code() == KEEL_STATUS_INVALID_ARGUMENT)
        << r.error().message();
}

TEST_P(Conformance, AStreamWaitsForAnEventOfAnotherDeviceThatDeclaresIt) {
    KEEL_RULE(6, "multidev.peer-wait-cap");
    KEEL_SIBLING_OR_SKIP(other);
    if (!device().has(DeviceCapability::peer_event_wait) || !other->has(DeviceCapability::peer_event_wait))
        GTEST_SKIP() << "KEEL_DEVICE_CAP_PEER_EVENT_WAIT not declared by both (optional)";
    const keel_plugin_api& api = plugin_table(device());
    const Bytes in = pattern(4096, 9);
    KEEL_ASSERT_OK_AND_ASSIGN(Stream producer, Stream::create(*other));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream consumer, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer src, Buffer::allocate(producer, in.size()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer dst, Buffer::allocate(consumer, in.size()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event e, Event::create(*other));
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(producer));
    KEEL_ASSERT_OK(producer.copy(src, in));
    KEEL_ASSERT_OK(e.record(producer));
    // Through the table: the plugin itself must take the other device's event.
    keel_event raw_event = nullptr;
    keel_error* created = api.event_create(plugin_handle(*other), 0, &raw_event);
    ASSERT_EQ(created, nullptr) << created->message;
    keel_error* recorded = api.event_record(raw_event, plugin_handle(producer));
    ASSERT_EQ(recorded, nullptr) << recorded->message;
    keel_error* waited = api.stream_wait_event(plugin_handle(consumer), raw_event);
    EXPECT_EQ(waited, nullptr) << (waited ? waited->message : "");
    keel_error_destroy(waited);
    KEEL_ASSERT_OK(consumer.copy(dst.view(), src.view()));
    KEEL_ASSERT_OK(src.record_stream(consumer));
    auto out = consumer.copy_to_vector<std::uint8_t>(dst.view());
    KEEL_ASSERT_OK(out);
    gate.open();
    KEEL_ASSERT_OK_AND_ASSIGN(Bytes got, std::move(*out).get());
    EXPECT_EQ(got, in);
    keel_error_destroy(api.event_destroy(raw_event));
}

}  // namespace
}  // namespace keel::conformance
