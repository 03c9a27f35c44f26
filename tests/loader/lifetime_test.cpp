// Plugin lifetimes: a plugin stays loaded while anything made from it lives,
// and is shut down (plugin_shutdown) and then unloaded after the last of
// them goes, even if that is after the Runtime. Two Runtimes share a load.
#include "test_support.hpp"

#include <keel/keel.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <span>
#include <future>
#include <thread>
#include <optional>
#include <vector>

namespace keel::test {
namespace {

using Lines = std::vector<std::string>;

fs::path good_file() { return fs::weakly_canonical(fake_file("good", "fake")); }

// The last owner went on another thread (the reclaimer's release): within
// 20 s the plugin is shut down and unloaded.
void expect_shut_down_and_unloaded_soon(const PluginTrace& trace) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (trace.lines().size() < 3 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(trace.lines(), (Lines{"init fake", "stream_destroy fake", "shutdown fake"}));
    while (is_loaded(good_file()) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_FALSE(is_loaded(good_file()));
}

TEST(Lifetime, ARuntimeWithNothingMadeFromItShutsThePluginDownAndUnloadsIt) {
    PluginTrace trace("shutdown_at_runtime_end");
    {
        auto rt = Runtime::create(only({fake_dir("good")}));
        ASSERT_TRUE(rt.ok());
        EXPECT_EQ(trace.lines(), (Lines{"init fake"}));
        EXPECT_TRUE(is_loaded(good_file()));
    }
    EXPECT_EQ(trace.lines(), (Lines{"init fake", "shutdown fake"}));
    EXPECT_FALSE(is_loaded(good_file()));
}

TEST(Lifetime, AStreamOutlivingItsRuntimeStillWorksAndShutdownFollowsItsDestruction) {
    PluginTrace trace("stream_outlives_runtime");
    std::optional<Stream> stream;
    std::optional<Buffer> buffer;
    {
        auto rt = Runtime::create(only({fake_dir("good")}));
        ASSERT_TRUE(rt.ok());
        auto dev = rt->device("fake:0");
        ASSERT_TRUE(dev.ok());
        auto s = Stream::create(*dev);
        ASSERT_TRUE(s.ok());
        stream.emplace(std::move(s).value());
        auto b = Buffer::allocate(*stream, 64);
        ASSERT_TRUE(b.ok());
        buffer.emplace(std::move(b).value());
    }  // the Runtime is gone

    EXPECT_EQ(trace.lines(), (Lines{"init fake"}));
    EXPECT_TRUE(is_loaded(good_file()));

    const std::vector<std::uint8_t> in(64, 0x5a);
    ASSERT_TRUE(stream->copy(*buffer, in).ok());
    auto out = stream->copy_to_vector<std::uint8_t>(*buffer);
    ASSERT_TRUE(out.ok());
    auto got = std::move(*out).get();
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, in);

    buffer.reset();
    EXPECT_EQ(trace.lines(), (Lines{"init fake"})) << "the stream still holds the plugin";
    stream.reset();
    EXPECT_EQ(trace.lines(), (Lines{"init fake", "stream_destroy fake", "shutdown fake"}));
    EXPECT_FALSE(is_loaded(good_file()));
}

TEST(Lifetime, ABufferOutlivingItsStreamMemoryAndRuntimeKeepsThemUntilItGoes) {
    PluginTrace trace("buffer_outlives_everything");
    std::optional<Buffer> buffer;
    std::optional<Fence> fence;
    std::optional<HostCopy> copy;
    std::vector<std::uint8_t> out(64, 0);
    {
        auto rt = Runtime::create(only({fake_dir("good")}));
        ASSERT_TRUE(rt.ok());
        auto memory = MemoryPool::create(rt->devices().at(0));
        ASSERT_TRUE(memory.ok());
        auto s = Stream::create(*memory);
        ASSERT_TRUE(s.ok());
        auto b = Buffer::allocate(*s, 64);
        ASSERT_TRUE(b.ok());
        ASSERT_TRUE(s->memset(*b, 0x21).ok());
        auto f = s->fence();
        ASSERT_TRUE(f.ok());
        auto c = s->copy(std::span(out), *b);
        ASSERT_TRUE(c.ok());
        buffer.emplace(std::move(b).value());
        fence.emplace(std::move(f).value());
        copy.emplace(std::move(c).value());
    }  // stream, memory handle and Runtime are gone
    EXPECT_EQ(trace.lines(), (Lines{"init fake", "stream_destroy fake"}));
    EXPECT_TRUE(is_loaded(good_file()));
    ASSERT_TRUE(copy->wait().ok()) << "its event is still there";
    EXPECT_EQ(out, std::vector<std::uint8_t>(64, 0x21));
    EXPECT_EQ(buffer->size(), 64u);
    copy.reset();
    buffer.reset();
    EXPECT_EQ(trace.lines(), (Lines{"init fake", "stream_destroy fake"})) << "the fence still holds it";
    fence.reset();
    EXPECT_EQ(trace.lines(), (Lines{"init fake", "stream_destroy fake", "shutdown fake"}));
    EXPECT_FALSE(is_loaded(good_file()));
}

TEST(Lifetime, AHeldBufferThatIsTheLastUserOfItsMemoryIsReleasedAndThePluginUnloaded) {
    // The hold is all that is left: the core lives in its own tracker's
    // release, which the reclaimer thread runs; the core must then go on
    // another thread (it cannot join the reclaimer from inside it).
    PluginTrace trace("held_last_owner");
    {
        auto rt = Runtime::create(only({fake_dir("good")}));
        ASSERT_TRUE(rt.ok());
        auto s = Stream::create(rt->devices().at(0));
        ASSERT_TRUE(s.ok());
        auto b = Buffer::allocate(*s, 4096);
        ASSERT_TRUE(b.ok());
        ASSERT_TRUE(s->memset(*b, 1).ok());
        ASSERT_TRUE(s->hold(std::move(b).value()).ok());
    }
    expect_shut_down_and_unloaded_soon(trace);
}

TEST(Lifetime, ADroppedHostFutureThatIsTheLastUserOfItsMemoryFreesItsVectorAndUnloadsThePlugin) {
    PluginTrace trace("future_last_owner");
    std::optional<HostFuture<std::uint8_t>> future;
    {
        auto rt = Runtime::create(only({fake_dir("good")}));
        ASSERT_TRUE(rt.ok());
        auto s = Stream::create(rt->devices().at(0));
        ASSERT_TRUE(s.ok());
        auto b = Buffer::allocate(*s, 4096);
        ASSERT_TRUE(b.ok());
        ASSERT_TRUE(s->memset(*b, 3).ok());
        auto f = s->copy_to_vector<std::uint8_t>(*b);
        ASSERT_TRUE(f.ok());
        future.emplace(std::move(f).value());
    }  // stream, buffer and Runtime are gone
    EXPECT_EQ(trace.lines(), (Lines{"init fake", "stream_destroy fake"}));
    future.reset();  // never waited for: its vector goes to a hold, the last user of the memory
    expect_shut_down_and_unloaded_soon(trace);
}

TEST(Lifetime, ADeviceCopyKeepsThePluginLoaded) {
    PluginTrace trace("device_copy");
    std::optional<Device> device;
    {
        auto rt = Runtime::create(only({fake_dir("good")}));
        ASSERT_TRUE(rt.ok());
        device.emplace(rt->devices().at(1));
    }
    EXPECT_EQ(trace.lines(), (Lines{"init fake"}));
    EXPECT_EQ(device->name(), "fake:1");
    auto info = device->memory_info();
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->total_bytes, 64ull << 20);
    device.reset();
    EXPECT_EQ(trace.lines(), (Lines{"init fake", "shutdown fake"}));
}

TEST(Lifetime, TwoRuntimesAliveAtOnceShareOneLoadOfAPlugin) {
    PluginTrace trace("two_runtimes");
    std::optional<Runtime> first(Runtime::create(only({fake_dir("good")})).value());
    std::optional<Runtime> second(Runtime::create(only({fake_file("good", "fake")})).value());
    EXPECT_EQ(trace.lines(), (Lines{"init fake"})) << "keel_plugin_init runs once per load";
    // One plugin device behind both: memory taken through one runtime is gone in the other's.
    {
        const MemoryInfo before = second->devices()[0].memory_info().value();
        RawBuffer taken = RawBuffer::allocate(first->devices()[0], 1 << 20).value();
        EXPECT_EQ(second->devices()[0].memory_info().value().free_bytes, before.free_bytes - (1 << 20));
    }  // the buffer, which keeps the plugin loaded too, is gone
    first.reset();
    EXPECT_EQ(trace.lines(), (Lines{"init fake"}));
    second.reset();
    EXPECT_EQ(trace.lines(), (Lines{"init fake", "shutdown fake"}));
}

TEST(Lifetime, RuntimesCreatedConcurrentlyShareOneLoad) {
    PluginTrace trace("concurrent_create");
    std::vector<std::optional<Runtime>> runtimes(4);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < runtimes.size(); ++i)
        threads.emplace_back([&runtimes, i] {
            auto rt = Runtime::create(only({fake_dir("good")}));
            if (rt.ok()) runtimes[i].emplace(std::move(rt).value());
        });
    for (auto& t : threads) t.join();
    for (const auto& rt : runtimes) {
        ASSERT_TRUE(rt.has_value());
        EXPECT_EQ(rt->devices().size(), 2u);
    }
    EXPECT_EQ(trace.lines(), (Lines{"init fake"}));
    runtimes.clear();
    EXPECT_EQ(trace.lines(), (Lines{"init fake", "shutdown fake"}));
}

TEST(Lifetime, LoadsAndShutdownsFromSeveralThreadsNeverOverlap) {
    PluginTrace trace("load_unload_race");
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 3; ++t)
        threads.emplace_back([&failures] {
            for (int i = 0; i < 20; ++i) {
                auto rt = Runtime::create(only({fake_dir("good")}));
                if (!rt.ok() || rt->devices().empty()) {
                    ++failures;
                    continue;
                }
                auto s = Stream::create(rt->devices()[0]);
                if (!s.ok() || !s->synchronize().ok()) ++failures;
            }
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
    // Each init is followed by its shutdown before the file is initialised again.
    std::string expected = "init fake";
    int inits = 0;
    for (const std::string& line : trace.lines()) {
        if (line == "stream_destroy fake") continue;
        ASSERT_EQ(line, expected);
        if (line == "init fake") ++inits;
        expected = expected == "init fake" ? "shutdown fake" : "init fake";
    }
    EXPECT_EQ(expected, "init fake") << "the last load was shut down";
    EXPECT_GE(inits, 1);
}

TEST(Lifetime, APluginLoadedAgainAfterShutdownIsInitialisedAgain) {
    PluginTrace trace("reload");
    { auto rt = Runtime::create(only({fake_dir("good")})); }
    { auto rt = Runtime::create(only({fake_dir("good")})); }
    EXPECT_EQ(trace.lines(), (Lines{"init fake", "shutdown fake", "init fake", "shutdown fake"}));
}

TEST(Lifetime, ARejectedPluginThatInitialisedIsShutDownAndUnloaded) {
    // missing_required initialises, then its table is refused.
    PluginTrace trace("rejected_after_init");
    auto rt = Runtime::create(only({fake_dir("missing_required")}));
    ASSERT_TRUE(rt.ok());
    EXPECT_EQ(rt->rejected_plugins().size(), 1u);
    EXPECT_EQ(trace.lines(), (Lines{"init norequired", "shutdown norequired"}));
    EXPECT_FALSE(is_loaded(fs::weakly_canonical(fake_file("missing_required", "norequired"))));
}

TEST(Lifetime, APluginWhoseTableHasAnotherMajorStaysMappedBecauseItCannotBeShutDown) {
    PluginTrace trace("wrong_major");
    auto rt = Runtime::create(only({fake_dir("wrong_major")}));
    ASSERT_TRUE(rt.ok());
    EXPECT_EQ(trace.lines(), (Lines{"init wrongmajor"})) << "no shutdown through a foreign table";
    EXPECT_TRUE(is_loaded(fs::weakly_canonical(fake_file("wrong_major", "wrongmajor"))));
}

TEST(Lifetime, AHostFunctionThatCallsKeelIsRefusedInsteadOfDeadlocking) {
    auto rt = Runtime::create(only({fake_dir("good")}));
    ASSERT_TRUE(rt.ok());
    auto stream = Stream::create(rt->devices()[0]);
    ASSERT_TRUE(stream.ok());
    std::promise<Result<void>> inner;
    const Stream& s = *stream;
    ASSERT_TRUE(s.enqueue_host_func([&] { inner.set_value(s.synchronize()); }).ok());
    Result<void> r = inner.get_future().get();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_FAILED_PRECONDITION);
    EXPECT_NE(r.error().message().find("host function"), std::string::npos) << r.error().message();
    EXPECT_TRUE(stream->synchronize().ok());
}

}  // namespace
}  // namespace keel::test
