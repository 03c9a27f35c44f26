// The hang doctor on planted hangs: each test builds a hang on cpu:0,
// asserts that keel::diagnose() names the chain and its cause (and the
// cycle, where there is one), then ends the hang itself by releasing the
// blocked host function, so that the test finishes.
#include <keel/keel.hpp>
#include <keel/diagnose.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

class Diagnose : public ::testing::Test {
protected:
    void SetUp() override {
        auto device = runtime_.device("cpu:0");
        ASSERT_TRUE(device.ok()) << device.error().message();
        device_.emplace(std::move(*device));
    }
    // Polls the diagnosis until `ready` holds for it (the planted host
    // function has started), at most 10 s.
    template <class Pred>
    keel::Diagnosis diagnose_when(Pred ready) {
        keel::Diagnosis d;
        for (int i = 0; i < 1000; ++i) {
            d = keel::diagnose();
            if (ready(d)) return d;
            std::this_thread::sleep_for(10ms);
        }
        return d;
    }
    keel::Stream stream() { return keel::Stream::create(*device_).expect("Stream::create"); }

    keel::Runtime runtime_ = keel::Runtime::create().expect("loading the plugins");
    std::optional<keel::Device> device_;
};

// Spins until `flag` (what the planted hang waits for) or `release` (the
// test ending the hang).
void block_until(const std::atomic<bool>& flag, const std::atomic<bool>& release) {
    while (!flag.load() && !release.load()) std::this_thread::sleep_for(1ms);
}

bool running(const keel::Diagnosis& d) { return d.text.find("running for") != std::string::npos; }

TEST_F(Diagnose, AHostFunctionWaitingForAStreamThatWaitsForItsOwnStreamIsACycle) {
    keel::Stream a = stream();
    keel::Stream b = stream();
    const std::string a_name = keel::diagnosis_name(a);
    const std::string b_name = keel::diagnosis_name(b);
    keel::Event e = keel::Event::create(*device_).expect("Event::create");
    std::atomic<bool> b_ran{false};
    std::atomic<bool> release{false};
    // A: op 0, a host function that waits until B's host function ran.
    ASSERT_TRUE(a.enqueue_host_func([&, &b = b] {
                     keel::BlockedOn on(b, "until stream B's host function ran");
                     block_until(b_ran, release);
                 }).ok());
    ASSERT_TRUE(e.record(a).ok());  // A op 1
    ASSERT_TRUE(b.wait(e).ok());    // B op 0: waits for A op 1
    ASSERT_TRUE(b.enqueue_host_func([&] { b_ran = true; }).ok());  // B op 1

    // A cycle once the host function said what it is blocked on (it runs
    // before its BlockedOn is in place).
    const keel::Diagnosis d = diagnose_when([](const keel::Diagnosis& x) { return running(x) && x.cycle; });
    EXPECT_TRUE(d.cycle) << d.text;
    EXPECT_TRUE(d.blocked) << d.text;
    EXPECT_THAT(d.text, HasSubstr(a_name + " op 0 (host function): running for"));
    EXPECT_THAT(d.text, HasSubstr("blocked on " + b_name + " (\"until stream B's host function ran\")"));
    EXPECT_THAT(d.text, HasSubstr(b_name + " op 0 (wait for an event): waits for op 1 of " + a_name + " (event record)"));
    EXPECT_THAT(d.text, HasSubstr("cycle: "));
    EXPECT_THAT(d.text, HasSubstr("back to "));

    release = true;  // the test ends the hang
    EXPECT_TRUE(a.synchronize().ok());
    EXPECT_TRUE(b.synchronize().ok());
    const keel::Diagnosis after = keel::diagnose();
    EXPECT_FALSE(after.cycle) << after.text;
    EXPECT_FALSE(after.blocked) << after.text;
}

TEST_F(Diagnose, AHostFunctionWaitingForItsOwnStreamIsACycle) {
    keel::Stream a = stream();
    const std::string a_name = keel::diagnosis_name(a);
    std::atomic<bool> later_ran{false};
    std::atomic<bool> release{false};
    ASSERT_TRUE(a.enqueue_host_func([&, &a = a] {
                     keel::BlockedOn on(a, "until the stream's next host function ran");
                     block_until(later_ran, release);
                 }).ok());
    ASSERT_TRUE(a.enqueue_host_func([&] { later_ran = true; }).ok());

    // A cycle once the host function said what it is blocked on (it runs
    // before its BlockedOn is in place).
    const keel::Diagnosis d = diagnose_when([](const keel::Diagnosis& x) { return running(x) && x.cycle; });
    EXPECT_TRUE(d.cycle) << d.text;
    EXPECT_THAT(d.text, HasSubstr(a_name + " op 0 (host function): running for"));
    EXPECT_THAT(d.text, HasSubstr("blocked on its own stream"));
    EXPECT_THAT(d.text, HasSubstr("cycle: " + a_name + " op 0 (host function)"));

    release = true;
    EXPECT_TRUE(a.synchronize().ok());
}

TEST_F(Diagnose, AHoldOnABlockedStreamIsNamedWithTheRootThatBlocksIt) {
    keel::Stream a = stream();
    keel::Stream b = stream();
    const std::string a_name = keel::diagnosis_name(a);
    const std::string b_name = keel::diagnosis_name(b);
    keel::Event e = keel::Event::create(*device_).expect("Event::create");
    std::atomic<bool> never{false};
    std::atomic<bool> release{false};
    // B: a host function that blocks on something keel cannot see (no
    // BlockedOn), then the event A waits for.
    ASSERT_TRUE(b.enqueue_host_func([&] { block_until(never, release); }).ok());  // B op 0
    ASSERT_TRUE(e.record(b).ok());                                                 // B op 1
    ASSERT_TRUE(a.wait(e).ok());                                                   // A op 0
    auto held = std::make_shared<int>(7);
    std::weak_ptr<int> watch = held;
    ASSERT_TRUE(a.hold(std::move(held)).ok());                                     // A op 1

    const keel::Diagnosis d = diagnose_when(running);
    EXPECT_FALSE(d.cycle) << d.text;
    EXPECT_TRUE(d.blocked) << d.text;
    EXPECT_THAT(d.text, HasSubstr(a_name + ": 2 ops enqueued"));
    EXPECT_THAT(d.text, HasSubstr("holds not released: op 1"));
    EXPECT_THAT(d.text, HasSubstr("cannot pass op 0 (wait for an event): waits for op 1 of " + b_name + " (event record)"));
    EXPECT_THAT(d.text, HasSubstr(a_name + " op 0 -> " + b_name + " op 0"));
    EXPECT_THAT(d.text, HasSubstr("root: " + b_name + " op 0 (host function): running for"));
    EXPECT_THAT(d.text, HasSubstr("keel cannot see what it waits for"));
    EXPECT_FALSE(watch.expired());

    release = true;
    EXPECT_TRUE(a.synchronize().ok());
    EXPECT_TRUE(b.synchronize().ok());
}

TEST_F(Diagnose, AHostThreadWaitIsFollowedToItsRoot) {
    keel::Stream a = stream();
    const std::string a_name = keel::diagnosis_name(a);
    std::atomic<bool> never{false};
    std::atomic<bool> release{false};
    ASSERT_TRUE(a.enqueue_host_func([&] {
                     keel::BlockedOn on("the test's latch");
                     block_until(never, release);
                 }).ok());
    std::thread waiter([&] { EXPECT_TRUE(a.synchronize().ok()); });
    const keel::Diagnosis d = diagnose_when([](const keel::Diagnosis& x) {
        return running(x) && x.text.find("in Stream::synchronize") != std::string::npos;
    });
    EXPECT_THAT(d.text, HasSubstr("in Stream::synchronize for op 0 of " + a_name));
    EXPECT_THAT(d.text, HasSubstr("(Stream::synchronize) -> " + a_name + " op 0"));
    EXPECT_THAT(d.text, HasSubstr("the host function is blocked on \"the test's latch\", outside keel"));
    EXPECT_FALSE(d.cycle) << d.text;
    release = true;
    waiter.join();
}

TEST_F(Diagnose, ACorrectProgramHasNoCycleAndNothingBlocked) {
    keel::Stream a = stream();
    keel::Stream b = stream();
    keel::Buffer buf = keel::Buffer::allocate(a, 1 << 16).expect("Buffer::allocate");
    keel::Event e = keel::Event::create(*device_).expect("Event::create");
    for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(a.memset(buf.view(), static_cast<std::uint8_t>(i)).ok());
        ASSERT_TRUE(e.record(a).ok());
        ASSERT_TRUE(b.wait(e).ok());
        ASSERT_TRUE(b.enqueue_host_func([] {}).ok());
        ASSERT_TRUE(a.order_after(b).ok());
    }
    ASSERT_TRUE(a.synchronize().ok());
    ASSERT_TRUE(b.synchronize().ok());
    const keel::Diagnosis d = keel::diagnose();
    EXPECT_FALSE(d.cycle) << d.text;
    EXPECT_FALSE(d.blocked) << d.text;
    EXPECT_THAT(d.text, HasSubstr("no hang"));
}

}  // namespace
