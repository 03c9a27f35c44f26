// The watch over host waits, run with KEEL_HANG_TIMEOUT=0.5 and
// KEEL_HANG_REPORT set (see CMakeLists.txt): a wait past the timeout logs
// the diagnosis and writes the report, and the wait goes on (the test then
// ends the planted hang); a correct program's short waits write nothing.
#include <keel/diagnose.hpp>
#include <keel/environment.hpp>
#include <keel/keel.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include <csignal>
#include <unistd.h>

namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// KEEL_HANG_REPORT as the watch reads it (once, at the first wait): the
// build's file with this process's id (ctest runs the tests of this file in
// parallel processes), unless the environment names one (the keel-trace
// test does).
// True when the file is this process's own (removed at the end of a test).
const bool kOwnReport = [] {
    if (keel::env::text(keel::env::Var::hang_report)) return false;
    ::setenv("KEEL_HANG_REPORT", (std::string(KEEL_HANG_WATCH_REPORT) + "." + std::to_string(::getpid())).c_str(), 1);
    return true;
}();
const std::filesystem::path kReport = std::string(keel::env::text(keel::env::Var::hang_report).value());

// KEEL_HANG_TIMEOUT as CMakeLists.txt sets it for this executable.
constexpr auto kHangTimeout = 500ms;

std::string read_report() {
    std::ifstream in(kReport);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

class HangWatch : public ::testing::Test {
protected:
    void SetUp() override {
        auto device = runtime_.device("cpu:0");
        ASSERT_TRUE(device.ok()) << device.error().message();
        device_.emplace(std::move(*device));
        std::error_code ec;
        std::filesystem::remove(kReport, ec);
    }
    void TearDown() override {
        std::error_code ec;
        if (kOwnReport) std::filesystem::remove(kReport, ec);
    }
    keel::Runtime runtime_ = keel::Runtime::create().expect("loading the plugins");
    std::optional<keel::Device> device_;
};

TEST_F(HangWatch, AHostWaitPastTheTimeoutLogsTheDiagnosisAndWritesTheReport) {
    keel::Stream a = keel::Stream::create(*device_).expect("Stream::create");
    keel::Stream b = keel::Stream::create(*device_).expect("Stream::create");
    keel::Event e = keel::Event::create(*device_).expect("Event::create");
    std::atomic<bool> b_ran{false};
    std::atomic<bool> release{false};
    ASSERT_TRUE(a.enqueue_host_func([&, &b = b] {
                     keel::BlockedOn on(b, "until stream B's host function ran");
                     while (!b_ran && !release) std::this_thread::sleep_for(1ms);
                 }).ok());
    ASSERT_TRUE(e.record(a).ok());
    ASSERT_TRUE(b.wait(e).ok());
    ASSERT_TRUE(b.enqueue_host_func([&] { b_ran = true; }).ok());

    // The test ends the hang once the watch reported it (or after 30 s).
    std::string report;
    std::thread releaser([&] {
        for (int i = 0; i < 3000 && !std::filesystem::exists(kReport); ++i) std::this_thread::sleep_for(10ms);
        report = read_report();
        release = true;
    });
    const keel::Result<void> waited = b.synchronize();  // the hang
    releaser.join();
    EXPECT_TRUE(waited.ok());
    EXPECT_THAT(report, HasSubstr("\"format\":\"keel-hang-report\""));
    EXPECT_THAT(report, HasSubstr("hang: thread"));
    EXPECT_THAT(report, HasSubstr("in Stream::synchronize for op 1 of " + keel::diagnosis_name(b)));
    EXPECT_THAT(report, HasSubstr("\"cycle\":true"));
    EXPECT_THAT(report, HasSubstr("cycle: " + keel::diagnosis_name(a) + " op 0 (host function)"));
}

// The signal arrives on this thread; the watch's thread writes the report.
TEST_F(HangWatch, SigusrOneWritesTheReportOfARunningProcess) {
    keel::Stream a = keel::Stream::create(*device_).expect("Stream::create");
    ASSERT_TRUE(a.synchronize().ok());  // the first wait starts the watch
    ASSERT_EQ(std::raise(SIGUSR1), 0);
    for (int i = 0; i < 3000 && !std::filesystem::exists(kReport); ++i) std::this_thread::sleep_for(10ms);
    const std::string report = read_report();
    EXPECT_THAT(report, HasSubstr("\"format\":\"keel-hang-report\""));
    EXPECT_THAT(report, HasSubstr("SIGUSR1"));
    EXPECT_THAT(report, HasSubstr("\"cycle\":false"));
}

TEST_F(HangWatch, ShortWaitsOfACorrectProgramReportNothing) {
    keel::Stream a = keel::Stream::create(*device_).expect("Stream::create");
    keel::Stream b = keel::Stream::create(*device_).expect("Stream::create");
    keel::Buffer buf = keel::Buffer::allocate(a, 1 << 16).expect("Buffer::allocate");
    // Every wait of the program lies inside one round, so a round's length
    // bounds its waits. On a loaded machine a round can itself pass the
    // timeout; a report is then right, and only a report of short waits is
    // wrong.
    auto longest_round = std::chrono::steady_clock::duration::zero();
    const auto end = std::chrono::steady_clock::now() + 1500ms;  // three timeouts
    while (std::chrono::steady_clock::now() < end) {
        const auto round_began = std::chrono::steady_clock::now();
        ASSERT_TRUE(a.memset(buf.view(), 1).ok());
        ASSERT_TRUE(b.order_after(a).ok());
        ASSERT_TRUE(b.enqueue_host_func([] { std::this_thread::sleep_for(1ms); }).ok());
        ASSERT_TRUE(b.synchronize().ok());
        ASSERT_TRUE(a.synchronize().ok());
        longest_round = std::max(longest_round, std::chrono::steady_clock::now() - round_began);
    }
    std::this_thread::sleep_for(700ms);  // a tick of the watch after the last wait
    if (longest_round < kHangTimeout) {
        EXPECT_FALSE(std::filesystem::exists(kReport)) << read_report();
    } else if (!std::filesystem::exists(kReport)) {
        GTEST_SKIP() << "a round took " << std::chrono::duration<double>(longest_round).count()
                     << " s on this loaded machine, past the timeout: nothing to check";
    }
}

}  // namespace
