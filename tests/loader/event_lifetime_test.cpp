// Events keep their plugin loaded without holding a Device (plugin_shares):
// made on several threads, they outlive every Device, Stream and the
// Runtime, keep working, and the plugin is shut down and unloaded only
// when the last of them is dropped, on whichever thread that happens.
#include "test_support.hpp"

#include <keel/keel.hpp>

#include <gtest/gtest.h>

#include <barrier>
#include <optional>
#include <thread>
#include <vector>

namespace keel::test {
namespace {

using Lines = std::vector<std::string>;

fs::path event_plugin_file() { return fs::weakly_canonical(fake_file("good", "fake")); }

constexpr int kEventThreads = 4;
constexpr int kEventsPerThread = 64;

TEST(EventLifetime, EventsMadeOnSeveralThreadsOutliveTheRuntimeAndTheLastOneUnloadsThePlugin) {
    PluginTrace trace("events_outlive_runtime");
    // Events made on each thread, dropped later by another thread.
    std::vector<std::vector<Event>> made(kEventThreads);
    {
        auto rt = Runtime::create(only({fake_dir("good")}));
        ASSERT_TRUE(rt.ok());
        const Device device = rt->devices().at(0);
        const Stream stream = Stream::create(device).expect("a stream");
        std::vector<std::thread> threads;
        for (int t = 0; t < kEventThreads; ++t)
            threads.emplace_back([&, t] {
                // Churn first: shares taken and given back on this thread's shard.
                for (int i = 0; i < kEventsPerThread; ++i)
                    (void)Event::create(device).expect("an event");
                for (int i = 0; i < kEventsPerThread; ++i) {
                    Event e = Event::create(device).expect("an event");
                    if (i % 8 == 0) {
                        ASSERT_TRUE(e.record(stream).ok());
                    }
                    made[static_cast<std::size_t>(t)].push_back(std::move(e));
                }
            });
        for (std::thread& th : threads) th.join();
        ASSERT_TRUE(stream.synchronize().ok());
    }  // the stream, every Device and the Runtime are gone
    EXPECT_EQ(trace.lines(), (Lines{"init fake", "stream_destroy fake"}));
    EXPECT_TRUE(is_loaded(event_plugin_file())) << "the events hold the plugin";

    // An event still works and still names its device.
    Event& first = made[0][0];
    ASSERT_TRUE(first.synchronize().ok());
    {
        // A Device handle made from an event starts a new handle group; its
        // end orphans the shards again.
        auto device = first.device();
        ASSERT_TRUE(device.ok());
        EXPECT_EQ(device->name(), "fake:0");
        Event more = Event::create(*device).expect("an event");
        Event taken = std::move(more);
        EXPECT_FALSE(more.device().ok()) << "an empty (moved-from) event has no device";
        made[0].push_back(std::move(taken));
    }

    // Each thread drops another thread's events, all at once; the last one
    // (whichever thread it is on) shuts the plugin down.
    std::barrier start(kEventThreads);
    std::vector<std::thread> droppers;
    for (int t = 0; t < kEventThreads; ++t)
        droppers.emplace_back([&, t] {
            std::vector<Event> mine = std::move(made[static_cast<std::size_t>((t + 1) % kEventThreads)]);
            start.arrive_and_wait();
            while (!mine.empty()) mine.pop_back();
        });
    for (std::thread& th : droppers) th.join();
    EXPECT_EQ(trace.lines(), (Lines{"init fake", "stream_destroy fake", "shutdown fake"}));
    EXPECT_FALSE(is_loaded(event_plugin_file()));
}

TEST(EventLifetime, APluginKeptOnlyByEventsLoadsOnceForANewRuntime) {
    PluginTrace trace("events_then_new_runtime");
    std::optional<Event> kept;
    {
        auto rt = Runtime::create(only({fake_dir("good")}));
        ASSERT_TRUE(rt.ok());
        kept.emplace(Event::create(rt->devices().at(0)).expect("an event"));
    }
    EXPECT_TRUE(is_loaded(event_plugin_file()));
    {
        // The loaded plugin is shared again: its Devices start a new handle
        // group, and events of either side keep it.
        auto rt = Runtime::create(only({fake_dir("good")}));
        ASSERT_TRUE(rt.ok());
        kept.reset();
        EXPECT_TRUE(is_loaded(event_plugin_file())) << "the second Runtime holds it";
        Event fresh = Event::create(rt->devices().at(0)).expect("an event");
        EXPECT_TRUE(fresh.synchronize().ok());
    }
    EXPECT_EQ(trace.lines(), (Lines{"init fake", "shutdown fake"}));
    EXPECT_FALSE(is_loaded(event_plugin_file()));
}

}  // namespace
}  // namespace keel::test
