// Several devices in one process: cpu:0 and cpu:1 (KEEL_CPU_DEVICES=2: peer
// copies and native waits), and, where the fake Level Zero driver is built,
// level_zero:0 and level_zero:1 (two fake GPUs: staged copies and bridged
// waits between them and with the CPU devices). The same file runs with the
// CPU checker on (ctest's .checker suffix), where an access not ordered
// after the work it depends on is a failure.
#include <keel/environment.hpp>
#include <keel/keel.hpp>
#include <keel/plugin_table.hpp>
#include <keel/testing/gate.hpp>
#include <keel/testing/result.hpp>

#include <gtest/gtest.h>

#ifdef KEEL_MULTIDEVICE_FAKE_ZE_CONTROL
#include <fake_ze/control.h>
#endif

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace keel {
namespace {

using testing::Gate;
using Bytes = std::vector<std::uint8_t>;

const Runtime& runtime() {
    static Runtime rt = [] {
        ::setenv("KEEL_CPU_DEVICES", "2", 0);
        return Runtime::create().expect("loading the plugins");
    }();
    return rt;
}

std::optional<Device> find(const char* name) {
    auto d = runtime().device(name);
    if (!d.ok()) return std::nullopt;
    return *d;
}

Bytes pattern(std::size_t n, std::uint8_t seed) {
    Bytes b(n);
    for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(seed + i * 7);
    return b;
}

Bytes read(const Stream& s, DeviceView view) {
    return s.copy_to_vector<std::uint8_t>(view).expect("copy_to_vector").get().expect("the copy");
}

bool says(const Result<void>& r, const std::string& what) {
    return !r.ok() && r.error().message().find(what) != std::string::npos;
}
std::string text(const Result<void>& r) { return r.ok() ? std::string("OK") : r.error().message(); }

// A pair of devices by name; the test is skipped when one did not load.
struct Pair {
    Device a;
    Device b;
};
#define KEEL_PAIR_OR_SKIP(var, first, second)                                                     \
    auto var##_a = find(first);                                                                    \
    auto var##_b = find(second);                                                                   \
    if (!var##_a || !var##_b) GTEST_SKIP() << first << " or " << second << " did not load";        \
    Pair var{*var##_a, *var##_b}

TEST(CpuDevices, TheCpuPluginExposesTheDevicesKeelCpuDevicesAsksFor) {
    ASSERT_TRUE(find("cpu:0"));
    ASSERT_TRUE(find("cpu:1")) << "KEEL_CPU_DEVICES=2";
    EXPECT_FALSE(find("cpu:2"));
    EXPECT_TRUE(find("cpu:1")->has(DeviceCapability::peer_copy));
    EXPECT_TRUE(find("cpu:1")->has(DeviceCapability::peer_event_wait));
}

// Run without FAKE_ZE_DEVICES: the fake Level Zero driver's default shape.
TEST(FakeLevelZeroDevices, TheFakeDriverExposesTwoGpusByDefault) {
    if (!find("level_zero:0")) GTEST_SKIP() << "level_zero:0 did not load";
    EXPECT_TRUE(find("level_zero:1")) << "the fake driver exposes two GPUs unless FAKE_ZE_DEVICES says otherwise";
    EXPECT_FALSE(find("level_zero:2"));
}

TEST(CpuDevices, EachDeviceHasItsOwnMemoryAndAddresses) {
    KEEL_PAIR_OR_SKIP(p, "cpu:0", "cpu:1");
    KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer x, RawBuffer::allocate(p.a, 4096));
    KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer y, RawBuffer::allocate(p.b, 4096));
    EXPECT_NE(x.address() >> 56, y.address() >> 56) << "the device tag of an address names its device";
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryInfo a, p.a.memory_info());
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryInfo b, p.b.memory_info());
    EXPECT_EQ(a.total_bytes, b.total_bytes);
    EXPECT_NE(a.free_bytes, a.total_bytes);
}

// A copy that names memory of another device without the cross-device path
// (a view that claims cpu:0 for memory of cpu:1) is refused by the plugin.
TEST(CpuDevices, ACopyNamingAnotherDevicesMemoryOnOneDeviceIsRefused) {
    KEEL_PAIR_OR_SKIP(p, "cpu:0", "cpu:1");
    KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer mine, RawBuffer::allocate(p.a, 256));
    KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer theirs, RawBuffer::allocate(p.b, 256));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(p.a));
    const DeviceView lie(p.a, theirs.address(), 256);
    const Result<void> d2d = s.copy(mine.view(), lie);
    EXPECT_EQ(d2d.ok() ? KEEL_STATUS_OK : d2d.error().code(), KEEL_STATUS_OUT_OF_RANGE) << text(d2d);
    EXPECT_TRUE(says(d2d, "is memory of cpu:1")) << text(d2d);
    const Result<void> set = s.memset(lie, 1);
    EXPECT_TRUE(says(set, "is memory of cpu:1")) << text(set);
    const Result<void> up = s.copy(lie, Bytes(256, 1));
    EXPECT_TRUE(says(up, "is memory of cpu:1")) << text(up);
    KEEL_EXPECT_OK(s.synchronize());  // refused at the call: the stream is healthy
}

TEST(CopyPath, SaysWhichPathEachPairTakes) {
    KEEL_PAIR_OR_SKIP(p, "cpu:0", "cpu:1");
    EXPECT_EQ(copy_path(p.a, p.a), CopyPath::same_device);
    EXPECT_EQ(copy_path(p.a, p.b), CopyPath::peer);
    EXPECT_EQ(copy_path(p.b, p.a), CopyPath::peer);
    EXPECT_TRUE(waits_natively(p.a, p.b));
    if (auto z = find("level_zero:0")) {
        EXPECT_EQ(copy_path(p.a, *z), CopyPath::staged);
        EXPECT_EQ(copy_path(*z, p.a), CopyPath::staged);
        EXPECT_FALSE(waits_natively(p.a, *z));
        EXPECT_FALSE(waits_natively(*z, p.a));
    }
    if (auto z0 = find("level_zero:0"), z1 = find("level_zero:1"); z0 && z1) {
        EXPECT_EQ(copy_path(*z0, *z1), CopyPath::staged);
    }
}

// The copy is the stream's work whichever side the stream is on: it runs
// after the stream's earlier work (held back here by a gate) and later work
// sees it done. Bytes arrive intact, both directions.
void copies_both_ways(const Device& a, const Device& b, std::size_t bytes) {
    const Bytes want = pattern(bytes, 3);
    for (const bool stream_on_source : {true, false}) {
        SCOPED_TRACE(std::string(stream_on_source ? "stream on the source " : "stream on the destination ") +
                     a.name() + " -> " + b.name());
        Gate gate;
        KEEL_ASSERT_OK_AND_ASSIGN(Stream sa, Stream::create(a));
        KEEL_ASSERT_OK_AND_ASSIGN(Stream sb, Stream::create(b));
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer src, Buffer::allocate(sa, bytes));
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer dst, Buffer::allocate(sb, bytes));
        KEEL_ASSERT_OK(sb.memset(dst, 0));
        KEEL_ASSERT_OK(sa.copy(src.view(), want));
        const Stream& s = stream_on_source ? sa : sb;
        const Stream& other = stream_on_source ? sb : sa;
        KEEL_ASSERT_OK(s.order_after(other));
        KEEL_ASSERT_OK(gate.hold(s));
        KEEL_ASSERT_OK(s.copy(dst.view(), src.view()));
        // Later work of the stream sees the copy: read the destination on it.
        auto got = s.copy_to_vector<std::uint8_t>(dst.view());
        if (!stream_on_source) {
            KEEL_ASSERT_OK(got);
        }
        gate.open();
        if (stream_on_source) {
            // The destination is the other device's: order its stream after the copy.
            KEEL_ASSERT_OK(other.order_after(s));
            KEEL_ASSERT_OK_AND_ASSIGN(Bytes seen, other.copy_to_vector<std::uint8_t>(dst.view()).expect("read").get());
            EXPECT_EQ(seen, want);
        } else {
            KEEL_ASSERT_OK_AND_ASSIGN(Bytes seen, std::move(*got).get());
            EXPECT_EQ(seen, want);
        }
        KEEL_ASSERT_OK(s.synchronize());
        KEEL_ASSERT_OK(other.synchronize());
        // The source was only read.
        EXPECT_EQ(read(sa, src.view()), want);
    }
}

TEST(CrossDeviceCopy, PeerCopiesBetweenCpuDevicesDeliverTheBytes) {
    KEEL_PAIR_OR_SKIP(p, "cpu:0", "cpu:1");
    copies_both_ways(p.a, p.b, 1 << 20);
    copies_both_ways(p.b, p.a, 1000);
}

TEST(CrossDeviceCopy, StagedCopiesBetweenTwoPluginsDeliverTheBytes) {
    KEEL_PAIR_OR_SKIP(p, "cpu:0", "level_zero:0");
    // Several chunks (a block of the ring used twice), and one short chunk.
    copies_both_ways(p.a, p.b, (8u << 20) + 5);
    copies_both_ways(p.b, p.a, (8u << 20) + 5);
    copies_both_ways(p.b, p.a, 4097);
}

// A staged copy goes through a bounded ring of pinned blocks: one far larger
// than the ring (and not a multiple of a block) arrives whole, there and
// back, with the stream on the reading side one way and on the writing side
// the other.
TEST(CrossDeviceCopy, StagedCopiesOfAnySizeGoThroughBoundedStagingMemory) {
    KEEL_PAIR_OR_SKIP(p, "cpu:0", "level_zero:0");
    const std::size_t bytes = (64u << 20) + 3;
    const Bytes want = pattern(bytes, 17);
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(p.a));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream z, Stream::create(p.b));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer src, Buffer::allocate(s, bytes));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer back, Buffer::allocate(s, bytes));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer there, Buffer::allocate(z, bytes));
    KEEL_ASSERT_OK(s.copy(src.view(), want));
    KEEL_ASSERT_OK(s.memset(back, 0));
    KEEL_ASSERT_OK(s.order_after(z));  // `there` was allocated on z
    KEEL_ASSERT_OK(s.copy(there.view(), src.view()));
    KEEL_ASSERT_OK(s.copy(back.view(), there.view()));
    KEEL_ASSERT_OK(z.order_after(s));  // `there` is freed on z
    EXPECT_TRUE(read(s, back.view()) == want) << "the bytes came back changed";
}

#ifdef KEEL_MULTIDEVICE_FAKE_ZE_CONTROL
// Staged copies keep their host blocks for the next copy: once warm, small
// copies there and back make almost no pinned allocation (the fake driver
// refuses every zeMemAllocHost after two more) and the bytes still arrive.
// A copy gives its blocks back from the runtime's hold thread, which may
// not have run yet when the next round starts (seen under ASan): the two
// allowed allocations are one round's worth of blocks given back late.
// Without the reuse, every round makes two.
TEST(CrossDeviceCopy, RepeatedStagedCopiesReuseTheirPinnedBlocks) {
    KEEL_PAIR_OR_SKIP(p, "cpu:0", "level_zero:0");
    constexpr std::size_t kBytes = 64 * 1024;
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(p.a));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream z, Stream::create(p.b));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer src, Buffer::allocate(s, kBytes));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer back, Buffer::allocate(s, kBytes));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer there, Buffer::allocate(z, kBytes));
    KEEL_ASSERT_OK(s.order_after(z));  // `there` was allocated on z
    KEEL_ASSERT_OK_AND_ASSIGN(MemoryPool pool, s.memory());
    struct Healed {
        ~Healed() { fake_ze_reset(); }
    } healed;
    for (int round = 0; round < 6; ++round) {
        const Bytes want = pattern(kBytes, static_cast<std::uint8_t>(round));
        KEEL_ASSERT_OK(s.copy(src.view(), want));
        KEEL_ASSERT_OK(s.memset(back, 0));
        KEEL_ASSERT_OK(s.copy(there.view(), src.view()));   // this stream reads
        KEEL_ASSERT_OK(s.copy(back.view(), there.view()));  // this stream writes
        EXPECT_TRUE(read(s, back.view()) == want) << "round " << round;
        pool.synchronize();  // the copies ran; their blocks come back from the hold thread
        if (round == 0) fake_ze_fail_calls("zeMemAllocHost", ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, 2, 1000);
    }
    KEEL_ASSERT_OK(z.order_after(s));  // `there` is freed on z
}
#endif

TEST(CrossDeviceCopy, StagedCopiesBetweenTwoDevicesOfAPluginWithoutPeerAccessDeliverTheBytes) {
    KEEL_PAIR_OR_SKIP(p, "level_zero:0", "level_zero:1");
    copies_both_ways(p.a, p.b, 65536);
}

TEST(CrossDeviceCopy, AViewOfNeitherDeviceIsRefused) {
    KEEL_PAIR_OR_SKIP(p, "cpu:0", "cpu:1");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s0, Stream::create(p.a));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s1, Stream::create(p.b));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer x, Buffer::allocate(s1, 64));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer y, Buffer::allocate(s1, 64));
    const Result<void> r = s0.copy(x.view(), y.view());
    EXPECT_EQ(r.ok() ? KEEL_STATUS_OK : r.error().code(), KEEL_STATUS_INVALID_ARGUMENT) << text(r);
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer small, Buffer::allocate(s0, 32));
    const Result<void> big = s0.copy(small.view(), x.view());
    EXPECT_EQ(big.ok() ? KEEL_STATUS_OK : big.error().code(), KEEL_STATUS_OUT_OF_RANGE) << text(big);
}

// A stream of one device waits for an event of another: the data it reads
// after the wait is what the other stream wrote before the record, although
// that stream was held back when the wait was enqueued, and the enqueuing
// thread did not block (the gate opens only after every enqueue returned).
void waits_for_event_of(const Device& producer, const Device& consumer) {
    SCOPED_TRACE(consumer.name() + " waits for " + producer.name());
    Gate gate;
    const Bytes want = pattern(4096, 11);
    KEEL_ASSERT_OK_AND_ASSIGN(Stream sp, Stream::create(producer));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream sc, Stream::create(consumer));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer src, Buffer::allocate(sp, want.size()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer dst, Buffer::allocate(sc, want.size()));
    KEEL_ASSERT_OK_AND_ASSIGN(Event e, Event::create(producer));
    KEEL_ASSERT_OK(gate.hold(sp));
    KEEL_ASSERT_OK(sp.copy(src.view(), want));
    KEEL_ASSERT_OK(e.record(sp));
    KEEL_ASSERT_OK(sc.wait(e));
    KEEL_ASSERT_OK(e.record(sp));  // a later record changes nothing for the wait
    KEEL_ASSERT_OK(sc.copy(dst.view(), src.view()));
    KEEL_ASSERT_OK(src.record_stream(sc));
    auto got = sc.copy_to_vector<std::uint8_t>(dst.view());
    KEEL_ASSERT_OK(got);
    KEEL_ASSERT_OK_AND_ASSIGN(bool done, sc.query());
    EXPECT_FALSE(done) << "the consumer ran ahead of the producer's gate";
    gate.open();
    KEEL_ASSERT_OK_AND_ASSIGN(Bytes seen, std::move(*got).get());
    EXPECT_EQ(seen, want);
}

TEST(CrossDeviceWait, AStreamWaitsNativelyForAnEventOfAnotherCpuDevice) {
    KEEL_PAIR_OR_SKIP(p, "cpu:0", "cpu:1");
    waits_for_event_of(p.a, p.b);
}

TEST(CrossDeviceWait, AWaitBetweenTwoPluginsIsBridgedWithoutBlockingTheCaller) {
    KEEL_PAIR_OR_SKIP(p, "cpu:0", "level_zero:0");
    waits_for_event_of(p.a, p.b);
    waits_for_event_of(p.b, p.a);
}

TEST(CrossDeviceWait, FencesAndOrderAfterWorkAcrossDevices) {
    for (const auto& [x, y] : {std::pair{"cpu:0", "cpu:1"}, std::pair{"cpu:0", "level_zero:0"}}) {
        auto a = find(x);
        auto b = find(y);
        if (!a || !b) continue;
        SCOPED_TRACE(std::string(x) + " / " + y);
        Gate gate;
        const Bytes want = pattern(512, 5);
        KEEL_ASSERT_OK_AND_ASSIGN(Stream sa, Stream::create(*a));
        KEEL_ASSERT_OK_AND_ASSIGN(Stream sb, Stream::create(*b));
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer src, Buffer::allocate(sa, want.size()));
        KEEL_ASSERT_OK(gate.hold(sa));
        KEEL_ASSERT_OK(sa.copy(src.view(), want));
        KEEL_ASSERT_OK_AND_ASSIGN(Fence f, sa.fence());
        KEEL_ASSERT_OK(sb.wait(f));
        f = Fence();  // dropping the fence changes nothing for the wait
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer dst, Buffer::allocate(sb, want.size()));
        KEEL_ASSERT_OK(sb.copy(dst.view(), src.view()));
        KEEL_ASSERT_OK(sa.order_after(sb));  // src is freed on sa after sb read it
        gate.open();
        EXPECT_EQ(read(sb, dst.view()), want);
    }
}

// The error of the awaited work travels across devices, bridged or native.
TEST(CrossDeviceWait, AFailureOfTheAwaitedStreamFailsTheWaitingStream) {
    for (const auto& [x, y] : {std::pair{"cpu:0", "cpu:1"}, std::pair{"cpu:0", "level_zero:0"}}) {
        auto a = find(x);
        auto b = find(y);
        if (!a || !b) continue;
        SCOPED_TRACE(std::string(y) + " waits for failed " + x);
        KEEL_ASSERT_OK_AND_ASSIGN(Stream sa, Stream::create(*a));
        KEEL_ASSERT_OK_AND_ASSIGN(Stream sb, Stream::create(*b));
        if (!sa.host_funcs_can_fail() || !sb.host_funcs_can_fail()) continue;
        Gate gate;  // the failure happens after the record and the wait were enqueued
        KEEL_ASSERT_OK(gate.hold(sa));
        KEEL_ASSERT_OK(sa.enqueue_host_func([]() -> Result<void> {
            return Error(KEEL_STATUS_DEVICE_ERROR, "[test] planted failure");
        }));
        KEEL_ASSERT_OK_AND_ASSIGN(Event e, Event::create(*a));
        KEEL_ASSERT_OK(e.record(sa));
        KEEL_ASSERT_OK(sb.wait(e));
        gate.open();
        const Result<void> r = sb.synchronize();
        EXPECT_FALSE(r.ok()) << "the waiting stream reported success after the awaited work failed";
    }
}

// Under the CPU checker (MultiDevice.CheckerSeesBridgedOrdering): a wait
// bridged through another plugin orders cpu:0 work the way the program does.
// Here s1 reads what s0 wrote: s0 -> level_zero:0 (bridged) -> ... -> s1
// (bridged), the middle passing through the other plugin in one of several
// ways. With the first link missing, the read is a race.
enum class Middle {
    event,                  // z records an event, s1 waits for it
    event_then_same_device,  // ... which a second stream of z's device waits for natively, then records
    stream,                 // s1 is ordered after z itself
    fence,                  // s1 waits for a fence of z
};

Result<void> read_after_a_bridged_chain(const Device& cpu, const Device& other, bool link_producer, Middle middle) {
    KEEL_TRY_ASSIGN(Stream s0, Stream::create(cpu));
    KEEL_TRY_ASSIGN(Stream s1, Stream::create(cpu));
    KEEL_TRY_ASSIGN(Stream z, Stream::create(other));
    KEEL_TRY_ASSIGN(Stream z2, Stream::create(other));
    KEEL_TRY_ASSIGN(Buffer x, Buffer::allocate(s0, 4096));
    KEEL_TRY_ASSIGN(Buffer y, Buffer::allocate(s1, 4096));
    KEEL_TRY(s0.memset(x, 7));
    if (link_producer) KEEL_TRY(z.order_after(s0));
    KEEL_TRY_ASSIGN(Event e, Event::create(other));
    KEEL_TRY(e.record(z));
    switch (middle) {
    case Middle::event: KEEL_TRY(s1.wait(e)); break;
    case Middle::event_then_same_device: {
        KEEL_TRY(z2.wait(e));
        KEEL_TRY_ASSIGN(Event e2, Event::create(other));
        KEEL_TRY(e2.record(z2));
        KEEL_TRY(s1.wait(e2));
        break;
    }
    case Middle::stream: KEEL_TRY(s1.order_after(z)); break;
    case Middle::fence: {
        KEEL_TRY_ASSIGN(Fence f, z.fence());
        KEEL_TRY(s1.wait(f));
        break;
    }
    }
    Result<void> read = s1.copy(y.view(), x.view());
    (void)x.record_stream(s1);
    (void)s1.synchronize();
    (void)s0.synchronize();
    return read;
}

bool under_the_race_checker() {
    const auto check = keel::env::flag(keel::env::Var::cpu_check);
    return check.ok() && check->value_or(false);
}

constexpr Middle kMiddles[] = {Middle::event, Middle::event_then_same_device, Middle::stream, Middle::fence};

TEST(CrossDeviceChecker, AReadOrderedThroughABridgedWaitIsClean) {
    if (!under_the_race_checker()) GTEST_SKIP() << "runs under the CPU checker";
    KEEL_PAIR_OR_SKIP(p, "cpu:0", "level_zero:0");
    for (Middle middle : kMiddles) {
        SCOPED_TRACE("middle " + std::to_string(static_cast<int>(middle)));
        KEEL_EXPECT_OK(read_after_a_bridged_chain(p.a, p.b, true, middle));
    }
}

TEST(CrossDeviceChecker, AReadNotOrderedAfterTheWriteIsStillARace) {
    if (!under_the_race_checker()) GTEST_SKIP() << "runs under the CPU checker";
    KEEL_PAIR_OR_SKIP(p, "cpu:0", "level_zero:0");
    for (Middle middle : kMiddles) {
        SCOPED_TRACE("middle " + std::to_string(static_cast<int>(middle)));
        const Result<void> r = read_after_a_bridged_chain(p.a, p.b, false, middle);
        EXPECT_TRUE(says(r, "race")) << text(r);
    }
}

// A block used by another device's stream is not reused before that use
// ended: the peer copy below is held back by a gate while its source is
// freed and reallocated, and the new owner overwrites it at once.
void freed_source_waits_for_use_on(const Device& owner_device, const Device& user_device) {
    SCOPED_TRACE("a buffer of " + owner_device.name() + " read by " + user_device.name());
    Gate gate;
    const Bytes want = pattern(1 << 16, 9);
    KEEL_ASSERT_OK_AND_ASSIGN(Stream owner, Stream::create(owner_device));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream user, Stream::create(user_device));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer dst, Buffer::allocate(user, want.size()));
    {
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer src, Buffer::allocate(owner, want.size()));
        KEEL_ASSERT_OK(owner.copy(src.view(), want));
        KEEL_ASSERT_OK(user.order_after(owner));
        KEEL_ASSERT_OK(gate.hold(user));
        KEEL_ASSERT_OK(user.copy(dst.view(), src.view()));
        KEEL_ASSERT_OK(src.record_stream(user));
    }  // freed while the copy waits at the gate
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer reused, Buffer::allocate(owner, want.size()));
    KEEL_ASSERT_OK(owner.memset(reused, 0xEE));
    gate.open();
    EXPECT_EQ(read(user, dst.view()), want) << "the block was reused before the other device's copy read it";
    KEEL_EXPECT_OK(owner.synchronize());
}

TEST(CrossDeviceMemory, ABlockUsedByAnotherDevicesStreamIsNotReusedBeforeThatUseEnded) {
    if (auto a = find("cpu:0"), b = find("cpu:1"); a && b) freed_source_waits_for_use_on(*a, *b);
    if (auto a = find("cpu:0"), b = find("level_zero:0"); a && b) {
        freed_source_waits_for_use_on(*a, *b);
        freed_source_waits_for_use_on(*b, *a);
    }
}

// A hold on one device's stream keeps another device's buffer alive until
// that stream passed the point.
TEST(CrossDeviceMemory, AHoldOnAnotherDevicesStreamKeepsTheBufferUntilThatStreamPassed) {
    KEEL_PAIR_OR_SKIP(p, "cpu:0", "cpu:1");
    Gate gate;
    const Bytes want = pattern(8192, 1);
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s0, Stream::create(p.a));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s1, Stream::create(p.b));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer dst, Buffer::allocate(s1, want.size()));
    {
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer src, Buffer::allocate(s0, want.size()));
        KEEL_ASSERT_OK(s0.copy(src.view(), want));
        KEEL_ASSERT_OK(s1.order_after(s0));
        KEEL_ASSERT_OK(gate.hold(s1));
        KEEL_ASSERT_OK(s1.copy(dst.view(), src.view()));
        KEEL_ASSERT_OK(s0.order_after(s1));  // the free on s0 is ordered after s1's copy
        KEEL_ASSERT_OK(s1.hold(std::move(src)));
    }
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer other, Buffer::allocate(s0, want.size()));
    KEEL_ASSERT_OK(s0.memset(other, 0x11));
    gate.open();
    EXPECT_EQ(read(s1, dst.view()), want);
}

}  // namespace
}  // namespace keel
