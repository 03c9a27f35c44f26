// Device times through timing events, on level_zero:0 over the fake driver
// (kernel timestamps of a 19.2 MHz timer): each operation's start and end
// come from events resolved when the session stops or the stream closes,
// never from a host wait.
#include <keel/keel.hpp>
#include <keel/trace.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string temp_file(const std::string& name) {
    return (std::filesystem::temp_directory_path() /
            ("keel_event_times_test_" + std::to_string(::getpid()) + "_" + name))
        .string();
}

// A slice of a stream's track, as the writer puts it: one event a line.
struct Slice {
    std::string name;
    std::uint64_t tid = 0;
    double ts_us = 0;
    double dur_us = 0;
    double enq_us = -1;  // -1: not written (an untimed slice starts at its enqueue)
    bool untimed = false;
    bool failed = false;
};

double number_after(const std::string& line, const std::string& key) {
    const std::size_t at = line.find(key);
    if (at == std::string::npos) return -1;
    return std::stod(line.substr(at + key.size()));
}

std::vector<Slice> stream_slices(const std::string& text) {
    std::vector<Slice> out;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.find("{\"ph\":\"X\"") == std::string::npos || line.find("\"cat\":\"wait\"") != std::string::npos)
            continue;
        Slice s;
        s.tid = static_cast<std::uint64_t>(number_after(line, "\"tid\":"));
        s.ts_us = number_after(line, "\"ts\":");
        s.dur_us = number_after(line, "\"dur\":");
        s.enq_us = number_after(line, "\"enq\":");
        const std::size_t name = line.find("\"name\":\"") + 8;
        s.name = line.substr(name, line.find('"', name) - name);
        s.untimed = line.find("\"untimed\":1") != std::string::npos;
        s.failed = line.find("\"status\":") != std::string::npos;
        out.push_back(s);
    }
    return out;
}

std::size_t count_named(const std::vector<Slice>& slices, const std::string& name, bool untimed) {
    std::size_t n = 0;
    for (const Slice& s : slices) n += s.name == name && s.untimed == untimed;
    return n;
}

class EventTimesTest : public ::testing::Test {
protected:
    void SetUp() override {
        runtime_ = keel::Runtime::create().expect("Runtime::create");
        auto device = runtime_->device("level_zero:0");
        if (!device.ok()) GTEST_SKIP() << "level_zero:0 is not here: " << device.error().message();
        device_ = *device;
    }
    std::optional<keel::Runtime> runtime_;
    std::optional<keel::Device> device_;
};

// The fake device's timer ticks every 1e9 / 19.2e6 ns: times from its
// events sit on that grid (host-function marks would not), and follow each
// other in enqueue order.
TEST_F(EventTimesTest, EachOperationIsTimedByTheDevicesTimerInEnqueueOrder) {
    const std::string path = temp_file("grid.json");
    keel::Stream s = keel::Stream::create(*device_).value();
    keel::Buffer buf = keel::Buffer::allocate(s, 4096).value();
    keel::Trace trace = keel::Trace::start({path}).value();
    ASSERT_TRUE(s.memset(buf, 1).ok());
    ASSERT_TRUE(s.enqueue_host_func(keel::HostFunc([] {
                    std::this_thread::sleep_for(std::chrono::milliseconds(20));
                })).ok());
    // More than one batch of events: some resolve while the session records.
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(s.memset(buf, static_cast<std::uint8_t>(i)).ok());
    ASSERT_TRUE(s.synchronize().ok());
    ASSERT_TRUE(trace.stop().ok());

    const std::vector<Slice> slices = stream_slices(read_text(path));
    ASSERT_EQ(count_named(slices, "memset", false), 101u);
    ASSERT_EQ(count_named(slices, "host function", false), 1u);
    const double tick_ns = 1e9 / 19.2e6;
    double previous_end_us = -1;
    double previous_at_ns = -1;
    for (const Slice& sl : slices) {
        EXPECT_FALSE(sl.untimed) << sl.name;
        EXPECT_GE(sl.enq_us, 0.0) << sl.name << " has no enqueue time";
        EXPECT_GE(sl.ts_us + 0.0015, sl.enq_us) << sl.name << " starts before it was enqueued";
        EXPECT_GE(sl.ts_us + 0.0015, previous_end_us) << sl.name << " starts before the operation ahead of it ends";
        // Each end is the end before it plus the device's elapsed times (one
        // step, or two through a start event of its own), whole numbers of
        // ticks: within the file's nanoseconds, the float's rounding and the
        // rounding up by one more float place each (a few nanoseconds for
        // the 20 ms step, more for a step a loaded machine made long); a
        // tick off would be 52 ns. A start is the end ahead of it, or its
        // enqueue on a stream that idled by then (a host time, off the grid),
        // or a start event of its own on the grid: the ends carry the check.
        const double at_ns = (sl.ts_us + sl.dur_us) * 1000;
        if (previous_at_ns >= 0) {
            const double step_ns = at_ns - previous_at_ns;
            const float step_ms = static_cast<float>(step_ns / 1e6);
            const double place_ns = (std::nextafter(step_ms, HUGE_VALF) - step_ms) * 1e6;
            const double ticks = step_ns / tick_ns;
            EXPECT_NEAR((ticks - std::round(ticks)) * tick_ns, 0.0, 2.0 + 4.0 * place_ns)
                << sl.name << " ending at " << at_ns << " ns is off the device timer's grid";
        }
        previous_at_ns = at_ns;
        previous_end_us = sl.ts_us + sl.dur_us;
        if (sl.name == "host function") {
            EXPECT_GE(sl.dur_us, 20000.0) << "the device saw the function's 20 ms";
        }
    }
    std::filesystem::remove(path);
}

// Stop never waits for the device: what has not run is written untimed, and
// the next session on the stream starts from a fresh anchor.
TEST_F(EventTimesTest, StoppingWhileTheStreamIsBlockedWritesWhatHasNotRunUntimed) {
    const std::string first = temp_file("blocked.json");
    const std::string second = temp_file("after.json");
    keel::Stream s = keel::Stream::create(*device_).value();
    keel::Buffer buf = keel::Buffer::allocate(s, 256).value();
    std::atomic<bool> go{false};
    keel::Trace trace = keel::Trace::start({first}).value();
    ASSERT_TRUE(s.memset(buf, 1).ok());
    ASSERT_TRUE(s.enqueue_host_func(keel::HostFunc([&go] {
                    for (int i = 0; i < 10000 && !go.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                })).ok());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(s.memset(buf, 2).ok());
    ASSERT_TRUE(trace.stop().ok());  // while the host function blocks the stream
    go.store(true);
    ASSERT_TRUE(s.synchronize().ok());
    std::vector<Slice> slices = stream_slices(read_text(first));
    // The first memset may or may not have run by the stop; the three behind
    // the blocked function have not.
    EXPECT_EQ(count_named(slices, "memset", true) + count_named(slices, "memset", false), 4u);
    EXPECT_GE(count_named(slices, "memset", true), 3u) << "the memsets behind the blocked function";
    EXPECT_EQ(count_named(slices, "host function", true), 1u);

    trace = keel::Trace::start({second}).value();
    ASSERT_TRUE(s.memset(buf, 3).ok());
    ASSERT_TRUE(s.memset(buf, 4).ok());
    ASSERT_TRUE(s.synchronize().ok());
    ASSERT_TRUE(trace.stop().ok());
    slices = stream_slices(read_text(second));
    EXPECT_EQ(count_named(slices, "memset", false), 2u);
    EXPECT_EQ(slices.size(), 2u);
    std::filesystem::remove(first);
    std::filesystem::remove(second);
}

// A stream that closes during the session resolves its times at its close
// (its work is done then), before its events go.
TEST_F(EventTimesTest, AStreamClosedDuringTheSessionKeepsItsTimes) {
    const std::string path = temp_file("closed.json");
    keel::Trace trace = keel::Trace::start({path}).value();
    {
        keel::Stream s = keel::Stream::create(*device_).value();
        keel::Buffer buf = keel::Buffer::allocate(s, 256).value();
        for (int i = 0; i < 5; ++i) ASSERT_TRUE(s.memset(buf, 1).ok());
    }
    ASSERT_TRUE(trace.stop().ok());
    const std::vector<Slice> slices = stream_slices(read_text(path));
    EXPECT_EQ(count_named(slices, "memset", false), 5u);
    std::filesystem::remove(path);
}

// A failed stream's events never complete normally: its operations after the
// failure carry its status.
TEST_F(EventTimesTest, AFailedStreamsOperationsCarryItsStatus) {
    keel::Stream s = keel::Stream::create(*device_).value();
    if (!s.host_funcs_can_fail()) GTEST_SKIP() << "the plugin's host functions cannot fail";
    const std::string path = temp_file("failed.json");
    keel::Buffer buf = keel::Buffer::allocate(s, 64).value();
    keel::Trace trace = keel::Trace::start({path}).value();
    ASSERT_TRUE(s.memset(buf, 1).ok());
    ASSERT_TRUE(s.enqueue_host_func(keel::HostFunc([]() -> keel::Result<void> {
                    return keel::Error(KEEL_STATUS_INTERNAL, "planted");
                })).ok());
    (void)s.memset(buf, 2);  // may be refused once the failure is known
    (void)s.synchronize();
    ASSERT_TRUE(trace.stop().ok());
    const std::vector<Slice> slices = stream_slices(read_text(path));
    std::size_t failed = 0;
    for (const Slice& sl : slices) failed += sl.failed;
    EXPECT_GE(failed, 1u) << read_text(path);
    std::filesystem::remove(path);
}

}  // namespace
