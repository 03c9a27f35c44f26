// settle_fallible_host_funcs (<keel/plugin_table.hpp>) on the CPU plugin,
// whose host functions can fail their stream: a stream's pending fallible
// host functions travel with the ordering (an event or a fence recorded on
// the stream, order_after) to the streams that wait for it, up to the point
// they wait for, and no further.
#include "device_fixture.hpp"

#include <keel/keel.hpp>
#include <keel/plugin_table.hpp>
#include <keel/testing/gate.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

namespace keel {
namespace {

using std::chrono::milliseconds;

TEST(SettleFallibleHostFuncs, AStreamTakesOnThePendingHostFunctionsOfWhatItWaitsForUpToThatPoint) {
    const Runtime rt = testing::checked_cpu_runtime();
    const Device device = rt.device("cpu:0").expect("cpu:0");
    const Stream a = Stream::create(device).expect("a stream");
    ASSERT_TRUE(a.host_funcs_can_fail()) << "the CPU plugin lost stream_enqueue_fallible_host_func";
    const Stream early = Stream::create(device).expect("a stream");
    const Stream by_event = Stream::create(device).expect("a stream");
    const Stream by_fence = Stream::create(device).expect("a stream");
    const Stream by_order = Stream::create(device).expect("a stream");
    const Stream through = Stream::create(device).expect("a stream");
    const Stream unrelated = Stream::create(device).expect("a stream");
    const Event before = Event::create(device).expect("an event");
    const Event after = Event::create(device).expect("an event");
    const Event relay = Event::create(device).expect("an event");
    testing::Gate gate;
    ASSERT_TRUE(gate.hold(a).ok());
    ASSERT_TRUE(before.record(a).ok());
    ASSERT_TRUE(a.enqueue_host_func([]() -> Result<void> {
                     return Error(KEEL_STATUS_DEVICE_ERROR, "planted failure 1618");
                 }).ok());
    ASSERT_TRUE(after.record(a).ok());
    const Fence fence = a.fence().expect("a fence");
    ASSERT_TRUE(early.wait(before).ok());
    ASSERT_TRUE(by_event.wait(after).ok());
    ASSERT_TRUE(by_fence.wait(fence).ok());
    ASSERT_TRUE(by_order.order_after(a).ok());
    // Two hops: `through` waits for an event of a stream that waited for `a`.
    ASSERT_TRUE(relay.record(by_event).ok());
    ASSERT_TRUE(through.wait(relay).ok());

    // Held: the failing one has not run. Nothing to wait for before it.
    for (const Stream* s : {&unrelated, &early}) {
        Result<std::optional<PendingHostFuncs>> none = settle_fallible_host_funcs(*s, milliseconds(0));
        ASSERT_TRUE(none.ok()) << none.error().message();
        EXPECT_FALSE(none->has_value()) << "a stream not ordered after the host function waits for it";
    }
    for (const Stream* s : {&by_event, &by_fence, &by_order, &through}) {
        Result<std::optional<PendingHostFuncs>> held = settle_fallible_host_funcs(*s, milliseconds(0));
        ASSERT_TRUE(held.ok()) << held.error().message();
        ASSERT_TRUE(held->has_value()) << "a stream ordered after a pending host function that can fail it settled";
        EXPECT_EQ((*held)->host_funcs, 1u);
        EXPECT_EQ((*held)->streams, 1u);
    }

    gate.open();
    for (const Stream* s : {&by_event, &by_fence, &by_order, &through}) {
        Result<std::optional<PendingHostFuncs>> failed = settle_fallible_host_funcs(*s, milliseconds(10000));
        ASSERT_FALSE(failed.ok()) << "the failure of a host function this stream waits for was not returned";
        EXPECT_EQ(failed.error().code(), KEEL_STATUS_DEVICE_ERROR);
        EXPECT_NE(failed.error().message().find("planted failure 1618"), std::string::npos) << failed.error().message();
        EXPECT_FALSE(s->synchronize().ok()) << "the plugin did not carry the failure along the wait";
    }
    Result<std::optional<PendingHostFuncs>> clean = settle_fallible_host_funcs(early, milliseconds(10000));
    ASSERT_TRUE(clean.ok()) << "a wait for a point before the failure took it on: " << clean.error().message();
    EXPECT_FALSE(clean->has_value());
    EXPECT_TRUE(early.synchronize().ok());
    EXPECT_FALSE(a.synchronize().ok());
}

}  // namespace
}  // namespace keel
