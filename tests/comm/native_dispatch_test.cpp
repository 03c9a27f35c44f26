// Communicator's choice of engine, in one process: the fake plugin's
// one-rank communication entries (tests/loader/fake_comm.hpp) run a group of
// one natively; the generic path runs when it is forced, when a plugin has
// no entries (the fake plugin's good variant), and when the plugin declines the group (two ranks, here two
// threads of this process). On cuda:0, a one-rank group runs on NCCL where
// the machine has a GPU and NCCL, and skips saying which is missing.
#include <keel/c_error.hpp>
#include <keel/comm.hpp>
#include <keel/keel.hpp>
#include <keel/plugin_table.hpp>
#include <keel/testing/result.hpp>
#include <keel/testing/scoped_env.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <latch>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

namespace keel {
namespace {

using testing::ScopedEnv;

std::string fresh_directory() {
    std::string dir = (std::filesystem::temp_directory_path() / "keel-native-XXXXXX").string();
    EXPECT_NE(::mkdtemp(dir.data()), nullptr);
    return dir;
}

std::size_t files_in(const std::string& dir) {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++n;
    return n;
}

Runtime fake_comm_runtime() {
    RuntimeOptions options;
    options.plugin_path = {KEEL_FAKE_COMM_PLUGIN_DIR};
    options.use_env_plugin_path = false;
    return Runtime::create(options).value();
}

std::vector<float> iota(std::size_t n, float first) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = first + static_cast<float>(i);
    return v;
}

// Holds `s` behind a plain host function until the returned flag is set.
std::shared_ptr<std::atomic<bool>> hold_until_set(const Stream& s) {
    auto go = std::make_shared<std::atomic<bool>>(false);
    EXPECT_TRUE(s.enqueue_host_func([go](Status) {
                     while (!go->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                 }).ok());
    return go;
}

// Sets `go` a little later, from another thread.
std::thread set_soon(std::shared_ptr<std::atomic<bool>> go) {
    return std::thread([go = std::move(go)] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        go->store(true);
    });
}

// A one-rank communicator on the native entries of `dev` (keys under
// `key_prefix`), and an all_reduce's input (1..8) and zeroed output, written
// through `reader`, which also reads the output back.
struct OneRankAllReduce {
    Communicator comm;
    Stream reader;
    std::vector<float> values;
    Buffer in;
    Buffer out;

    static OneRankAllReduce create(const Device& dev, const std::string& key_prefix) {
        CommOptions options;
        options.key_prefix = key_prefix;
        Communicator comm = Communicator::create(dev, Store::file(fresh_directory()).value(), 0, 1, options).value();
        EXPECT_TRUE(comm.uses_native_engine()) << comm.engine_description();
        Stream reader = Stream::create(dev).value();
        std::vector<float> values = iota(8, 1.0f);
        Buffer in = Buffer::allocate(reader, values.size() * sizeof(float)).value();
        Buffer out = Buffer::allocate(reader, values.size() * sizeof(float)).value();
        EXPECT_TRUE(reader.copy(in.view(), values).ok());
        OneRankAllReduce r{std::move(comm), std::move(reader), std::move(values), std::move(in), std::move(out)};
        r.clear_output();
        return r;
    }
    [[nodiscard]] Result<void> run(const Stream& s) const {
        return comm.all_reduce(s, in.view(), out.view(), KEEL_DTYPE_F32, ReduceOp::sum);
    }
    [[nodiscard]] std::vector<float> output() const {
        return reader.copy_to_vector<float>(out.view()).value().get().value();
    }
    void clear_output() const {
        EXPECT_TRUE(reader.memset(out.view(), 0).ok());
        EXPECT_TRUE(reader.synchronize().ok());
    }
};

// all_reduce (out of place) of `values` on `comm`; what came back.
std::vector<float> all_reduce(const Communicator& comm, const Stream& s, const std::vector<float>& values) {
    const std::uint64_t bytes = values.size() * sizeof(float);
    Buffer in = Buffer::allocate(s, bytes).value();
    Buffer out = Buffer::allocate(s, bytes).value();
    EXPECT_TRUE(s.copy(in.view(), values).ok());
    Result<void> r = comm.all_reduce(s, in.view(), out.view(), KEEL_DTYPE_F32, ReduceOp::sum);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return s.copy_to_vector<float>(out.view()).value().get().value();
}

// Options of a group whose ranks are threads of this process: keys under
// `prefix`, and a timeout no correct run comes near.
CommOptions thread_group_options(const std::string& prefix) {
    CommOptions options;
    options.key_prefix = prefix;
    options.timeout = std::chrono::milliseconds(20000);
    return options;
}

// Runs `rank_body(rank)` for ranks 0..n-1, each on a thread of its own.
void on_rank_threads(int n, const std::function<void(int)>& rank_body) {
    std::vector<std::thread> ranks;
    for (int rank = 0; rank < n; ++rank) ranks.emplace_back(rank_body, rank);
    for (std::thread& t : ranks) t.join();
}

TEST(CommNativeDispatch, AOneRankGroupOnAPluginWithTheSetRunsOnItsEntries) {
    const Runtime rt = fake_comm_runtime();
    const Device dev = rt.device("commfake:0").value();
    const Store store = Store::file(fresh_directory()).value();
    KEEL_ASSERT_OK_AND_ASSIGN(Communicator comm, Communicator::create(dev, store, 0, 1));
    EXPECT_EQ(comm.engine_kind(), CommEngine::native) << comm.engine_description();
    EXPECT_TRUE(comm.uses_native_engine());
    const Stream s = Stream::create(dev).value();
    const std::vector<float> v = iota(37, 0.5f);
    EXPECT_EQ(all_reduce(comm, s, v), v);
    Buffer a = Buffer::allocate(s, 64).value();
    Buffer b = Buffer::allocate(s, 64).value();
    KEEL_EXPECT_OK(comm.broadcast(s, a.view(), b.view(), 0));
    KEEL_EXPECT_OK(comm.all_gather(s, a.view(), b.view()));
    KEEL_EXPECT_OK(comm.reduce_scatter(s, a.view(), b.view(), KEEL_DTYPE_I32, ReduceOp::max));
    // The runtime's checks come first, the same on both paths.
    Result<void> self = comm.send(s, a.view(), 0);
    ASSERT_FALSE(self.ok());
    EXPECT_EQ(self.error().code(), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_OK(s.synchronize());
    KEEL_EXPECT_OK(comm.error());
}

// keel.h's store callbacks have no erase: the runtime records what the
// plugin set under the communicator's prefix and erases it when the
// communicator goes (the fake engine's rank key stayed in the store).
TEST(CommNativeDispatch, TheKeysAPluginSetInTheStoreAreErasedWhenTheCommunicatorGoes) {
    const Runtime rt = fake_comm_runtime();
    const Device dev = rt.device("commfake:0").value();
    const std::string dir = fresh_directory();
    const Store store = Store::file(dir).value();
    for (int job = 0; job < 2; ++job) {
        CommOptions options;
        options.key_prefix = "same-prefix-every-job";
        KEEL_ASSERT_OK_AND_ASSIGN(Communicator comm, Communicator::create(dev, store, 0, 1, options));
        ASSERT_EQ(comm.engine_kind(), CommEngine::native) << comm.engine_description();
        EXPECT_GT(files_in(dir), 0u) << "the fake engine set no key: this test tests nothing";
        const Stream s = Stream::create(dev).value();
        EXPECT_EQ(all_reduce(comm, s, iota(3, 1.0f)), iota(3, 1.0f));
        KEEL_EXPECT_OK(s.synchronize());
    }  // the second job under the same prefix met no key of the first
    EXPECT_EQ(files_in(dir), 0u) << "keys left in the store after the communicators went";
    std::filesystem::remove_all(dir);
}

TEST(CommNativeDispatch, AnAbortedNativeCommunicatorFailsLaterOperationsNamingIt) {
    const Runtime rt = fake_comm_runtime();
    const Device dev = rt.device("commfake:0").value();
    CommOptions options;
    options.key_prefix = "abort-me";
    KEEL_ASSERT_OK_AND_ASSIGN(Communicator comm,
                              Communicator::create(dev, Store::file(fresh_directory()).value(), 0, 1, options));
    ASSERT_TRUE(comm.uses_native_engine()) << comm.engine_description();
    comm.abort();
    comm.abort();
    ASSERT_FALSE(comm.error().ok());
    EXPECT_EQ(comm.error().error().code(), KEEL_STATUS_FAILED_PRECONDITION);
    const Stream s = Stream::create(dev).value();
    Buffer a = Buffer::allocate(s, 64).value();
    Result<void> after = comm.all_reduce(s, a.view(), KEEL_DTYPE_F32, ReduceOp::sum);
    ASSERT_FALSE(after.ok());
    EXPECT_EQ(after.error().code(), KEEL_STATUS_FAILED_PRECONDITION);
    EXPECT_NE(after.error().message().find("abort-me"), std::string::npos) << after.error().message();
}

// A native operation the engine fails on its timeout (UNAVAILABLE, as the
// CUDA plugin's NCCL connection set-up past the timeout) fails the
// communicator: error() reports it, and later operations are refused.
TEST(CommNativeDispatch, ANativeTimeoutFailsTheCommunicatorsError) {
    const Runtime rt = fake_comm_runtime();
    const Device dev = rt.device("commfake:0").value();
    CommOptions options;
    options.key_prefix = "times-out";
    KEEL_ASSERT_OK_AND_ASSIGN(Communicator comm,
                              Communicator::create(dev, Store::file(fresh_directory()).value(), 0, 1, options));
    ASSERT_TRUE(comm.uses_native_engine()) << comm.engine_description();
    KEEL_EXPECT_OK(comm.error());
    const Stream s = Stream::create(dev).value();
    Buffer a = Buffer::allocate(s, 64).value();
    Result<void> timed_out = comm.all_reduce(s, a.view(), KEEL_DTYPE_F32, ReduceOp::sum);
    ASSERT_FALSE(timed_out.ok());
    EXPECT_EQ(timed_out.error().code(), KEEL_STATUS_UNAVAILABLE);
    ASSERT_FALSE(comm.error().ok()) << "error() stayed OK after the engine's timeout";
    EXPECT_EQ(comm.error().error().code(), KEEL_STATUS_UNAVAILABLE);
    EXPECT_NE(comm.error().error().message().find("timeout"), std::string::npos) << comm.error().error().message();
    EXPECT_FALSE(comm.barrier(s).ok());
}

// A host function that can fail the stream and is still pending when a
// native all_reduce is enqueued: the fake device, as CUDA, runs the work
// queued behind a host function that then fails, so the engine would reduce
// (and the peers receive) input the program never meant, with no error.
// The stream is held behind a plain host function until a thread releases
// it, so the fallible one has not run when the all_reduce is called. One that
// succeeds lets the operation go on with the right result; one that fails
// keeps it from the engine: the call fails naming the original error, the
// communicator fails, and the output is never written.
TEST(CommNativeDispatch, AnOperationBehindAPendingHostFunctionThatFailsNeverReachesTheEngine) {
    const Runtime rt = fake_comm_runtime();
    const Device dev = rt.device("commfake:0").value();
    const OneRankAllReduce op = OneRankAllReduce::create(dev, "fails-behind");
    const Communicator& comm = op.comm;
    const Stream s = Stream::create(dev).value();
    ASSERT_TRUE(s.host_funcs_can_fail()) << "the fake comm plugin lost stream_enqueue_fallible_host_func";
    const auto held_until_released = [&s](bool fails) {
        std::shared_ptr<std::atomic<bool>> go = hold_until_set(s);
        EXPECT_TRUE(s.enqueue_host_func([fails]() -> Result<void> {
                         if (fails) return Error(KEEL_STATUS_UNAVAILABLE, "planted host function failure 8086");
                         return {};
                     }).ok());
        return set_soon(std::move(go));
    };
    std::thread release = held_until_released(false);
    KEEL_EXPECT_OK(op.run(s));
    release.join();
    KEEL_ASSERT_OK(s.synchronize());
    EXPECT_EQ(op.output(), op.values);
    op.clear_output();

    release = held_until_released(true);
    Result<void> behind = op.run(s);
    release.join();
    ASSERT_FALSE(behind.ok()) << "the all_reduce went to the engine behind a host function that then failed";
    EXPECT_EQ(behind.error().code(), KEEL_STATUS_UNAVAILABLE);
    EXPECT_NE(behind.error().message().find("planted host function failure 8086"), std::string::npos)
        << behind.error().message();
    EXPECT_NE(behind.error().message().find("fails-behind"), std::string::npos) << behind.error().message();
    EXPECT_FALSE(s.synchronize().ok());
    ASSERT_FALSE(comm.error().ok()) << "error() is OK after an operation was refused for its failed stream";
    EXPECT_NE(comm.error().error().message().find("planted host function failure 8086"), std::string::npos)
        << comm.error().error().message();
    EXPECT_EQ(op.output(), std::vector<float>(op.values.size(), 0.0f))
        << "the engine wrote the output of an operation behind a failed host function";
    // Failed on every rank, as abort() does: later operations are refused.
    EXPECT_FALSE(op.run(op.reader).ok());
}

// A stream that waits for another through events takes on that stream's
// pending host functions that can fail it: the all_reduce on `c`, which
// waits (an event) for `b`, which waits (an event) for `a`, where a host
// function is still pending, waits for it. One that succeeds lets the
// operation go on with the right result; one that fails keeps it from the
// engine (the fake device, as CUDA, would run it after `c` failed through
// the waits, over input `a` never produced, and write the output).
TEST(CommNativeDispatch, AnOperationOnAStreamThatWaitsThroughEventsForAHostFunctionThatFailsNeverReachesTheEngine) {
    const Runtime rt = fake_comm_runtime();
    const Device dev = rt.device("commfake:0").value();
    const OneRankAllReduce op = OneRankAllReduce::create(dev, "fails-upstream");
    const Communicator& comm = op.comm;
    const Stream a = Stream::create(dev).value();
    const Stream b = Stream::create(dev).value();
    const Stream c = Stream::create(dev).value();
    const Event on_a = Event::create(dev).value();
    const Event on_b = Event::create(dev).value();
    const auto behind_a = [&](bool fails) {
        std::shared_ptr<std::atomic<bool>> go = hold_until_set(a);
        EXPECT_TRUE(a.enqueue_host_func([fails]() -> Result<void> {
                         if (fails) return Error(KEEL_STATUS_UNAVAILABLE, "planted upstream failure 4711");
                         return {};
                     }).ok());
        EXPECT_TRUE(on_a.record(a).ok());
        EXPECT_TRUE(b.wait(on_a).ok());
        EXPECT_TRUE(on_b.record(b).ok());
        EXPECT_TRUE(c.wait(on_b).ok());
        return set_soon(std::move(go));
    };
    std::thread release = behind_a(false);
    KEEL_EXPECT_OK(op.run(c));
    release.join();
    KEEL_ASSERT_OK(c.synchronize());
    EXPECT_EQ(op.output(), op.values);
    op.clear_output();
    KEEL_EXPECT_OK(comm.error());

    release = behind_a(true);
    Result<void> behind = op.run(c);
    release.join();
    ASSERT_FALSE(behind.ok()) << "the all_reduce went to the engine behind another stream's host function that failed";
    EXPECT_EQ(behind.error().code(), KEEL_STATUS_UNAVAILABLE);
    EXPECT_NE(behind.error().message().find("planted upstream failure 4711"), std::string::npos)
        << behind.error().message();
    Result<void> synced = c.synchronize();
    ASSERT_FALSE(synced.ok()) << "the stream that waited for a failed one reports success";
    EXPECT_NE(synced.error().message().find("planted upstream failure 4711"), std::string::npos)
        << synced.error().message();
    ASSERT_FALSE(comm.error().ok()) << "error() is OK after an operation was refused for its failed stream";
    EXPECT_EQ(op.output(), std::vector<float>(op.values.size(), 0.0f))
        << "the engine wrote the output of an operation behind another stream's failed host function";
}

// The host function the runtime enqueues itself for a wait across devices
// (a bridge: the fake devices cannot wait for each other's events) counts
// as the program's do: the all_reduce on commfake:0 behind a wait for an
// event of commfake:1 waits for it. The failure on commfake:1 comes from a
// host function enqueued through the plugin's table, which the runtime
// cannot see (as a device's own failure): only the bridge's host function,
// passing that failure on, can keep the operation from the engine.
TEST(CommNativeDispatch, AnOperationBehindABridgedWaitForAFailedStreamOfAnotherDeviceNeverReachesTheEngine) {
    const Runtime rt = fake_comm_runtime();
    const Device dev = rt.device("commfake:0").value();
    const Device other = rt.device("commfake:1").value();
    const OneRankAllReduce op = OneRankAllReduce::create(dev, "fails-across");
    const Stream x = Stream::create(other).value();
    const Stream s = Stream::create(dev).value();
    std::shared_ptr<std::atomic<bool>> go = hold_until_set(x);
    const keel_plugin_api& table = plugin_table(other);
    ASSERT_NE(table.stream_enqueue_fallible_host_func, nullptr);
    KEEL_ASSERT_OK(take_c_error(table.stream_enqueue_fallible_host_func(
        plugin_handle(x),
        [](void*, keel_status) -> keel_error* {
            return make_c_error(KEEL_STATUS_DEVICE_ERROR, "planted device failure 2718");
        },
        nullptr)));
    const Event on_x = Event::create(other).value();
    KEEL_ASSERT_OK(on_x.record(x));
    KEEL_ASSERT_OK(s.wait(on_x));
    std::thread release = set_soon(go);
    Result<void> behind = op.run(s);
    release.join();
    ASSERT_FALSE(behind.ok()) << "the all_reduce went to the engine behind a bridged wait for a failed stream";
    EXPECT_EQ(behind.error().code(), KEEL_STATUS_DEVICE_ERROR) << behind.error().message();
    EXPECT_FALSE(s.synchronize().ok());
    EXPECT_FALSE(op.comm.error().ok());
    EXPECT_EQ(op.output(), std::vector<float>(op.values.size(), 0.0f))
        << "the engine wrote the output of an operation behind a failed bridged wait";
    (void)x.synchronize();
}

// Host functions that can fail the stream still pending at the
// communicator's timeout (the stream is held until after the call
// returned): the operation is not enqueued, and the communicator fails,
// naming how many were pending and for how long, instead of refusing the
// one call and staying healthy while the peers wait for its part.
TEST(CommNativeDispatch, ASettleWaitThatTimesOutFailsTheCommunicatorNamingWhatWasPending) {
    const Runtime rt = fake_comm_runtime();
    const Device dev = rt.device("commfake:0").value();
    CommOptions options;
    options.key_prefix = "settle-times-out";
    options.timeout = std::chrono::milliseconds(200);
    KEEL_ASSERT_OK_AND_ASSIGN(Communicator comm,
                              Communicator::create(dev, Store::file(fresh_directory()).value(), 0, 1, options));
    ASSERT_TRUE(comm.uses_native_engine()) << comm.engine_description();
    const Stream s = Stream::create(dev).value();
    Buffer b = Buffer::allocate(s, 64).value();
    KEEL_ASSERT_OK(s.memset(b.view(), 0));
    std::shared_ptr<std::atomic<bool>> go = hold_until_set(s);
    KEEL_ASSERT_OK(s.enqueue_host_func([]() -> Result<void> { return {}; }));
    Result<void> refused = comm.all_reduce(s, b.view(), KEEL_DTYPE_F32, ReduceOp::sum);
    go->store(true);
    ASSERT_FALSE(refused.ok()) << "the all_reduce went to the engine with its stream's host function still pending";
    EXPECT_EQ(refused.error().code(), KEEL_STATUS_UNAVAILABLE);
    const std::string& m = refused.error().message();
    EXPECT_NE(m.find("1 host function(s)"), std::string::npos) << m;
    EXPECT_NE(m.find("still pending after 200 ms"), std::string::npos) << m;
    EXPECT_NE(m.find("settle-times-out"), std::string::npos) << m;
    ASSERT_FALSE(comm.error().ok()) << "error() is OK after a settle wait timed out";
    EXPECT_NE(comm.error().error().message().find("still pending after 200 ms"), std::string::npos)
        << comm.error().error().message();
    EXPECT_FALSE(comm.barrier(s).ok());
    KEEL_EXPECT_OK(s.synchronize());
}

TEST(CommNativeDispatch, TheGenericPathIsForcedByTheOptionOrTheEnvironment) {
    const Runtime rt = fake_comm_runtime();
    const Device dev = rt.device("commfake:0").value();
    const Stream s = Stream::create(dev).value();
    const std::vector<float> v = iota(5, 2.0f);
    {
        CommOptions options;
        options.native = false;
        KEEL_ASSERT_OK_AND_ASSIGN(Communicator comm,
                                  Communicator::create(dev, Store::file(fresh_directory()).value(), 0, 1, options));
        EXPECT_FALSE(comm.uses_native_engine());
        EXPECT_EQ(comm.engine_kind(), CommEngine::generic_forced) << comm.engine_description();
        EXPECT_EQ(all_reduce(comm, s, v), v);
    }
    {
        const ScopedEnv generic("KEEL_COMM_GENERIC", "1");
        KEEL_ASSERT_OK_AND_ASSIGN(Communicator comm,
                                  Communicator::create(dev, Store::file(fresh_directory()).value(), 0, 1));
        EXPECT_EQ(comm.engine_kind(), CommEngine::generic_forced) << comm.engine_description();
    }
    {
        const ScopedEnv bad("KEEL_COMM_GENERIC", "maybe");
        Result<Communicator> refused = Communicator::create(dev, Store::file(fresh_directory()).value(), 0, 1);
        ASSERT_FALSE(refused.ok());
        EXPECT_NE(refused.error().message().find("KEEL_COMM_GENERIC"), std::string::npos)
            << refused.error().message();
    }
}

TEST(CommNativeDispatch, APluginWithoutTheSetGetsTheGenericPath) {
    RuntimeOptions options;
    options.plugin_path = {KEEL_FAKE_PLUGIN_FILE};
    options.use_env_plugin_path = false;
    options.use_default_plugin_dirs = false;
    const Runtime rt = Runtime::create(options).value();
    const Device dev = rt.device("fake:0").value();
    KEEL_ASSERT_OK_AND_ASSIGN(Communicator comm,
                              Communicator::create(dev, Store::file(fresh_directory()).value(), 0, 1));
    EXPECT_FALSE(comm.uses_native_engine());
    EXPECT_EQ(comm.engine_kind(), CommEngine::generic_no_entries) << comm.engine_description();
}

// Three ranks (threads of this process, on the two fake devices): the fake
// engine declines a group of three on every rank, and all fall back to the
// generic path under the same store and prefix, which then sums across them.
TEST(CommNativeDispatch, AGroupThePluginDeclinesFallsBackToTheGenericPathOnEveryRank) {
    const Runtime rt = fake_comm_runtime();
    const Store store = Store::file(fresh_directory()).value();
    const CommOptions options = thread_group_options("declined");
    constexpr int kRanks = 3;
    std::vector<float> results[kRanks];
    CommEngine engines[kRanks] = {CommEngine::native, CommEngine::native, CommEngine::native};
    std::string failures[kRanks];
    on_rank_threads(kRanks, [&](int rank) {
        // Two fake devices: ranks 0 and 2 share one.
        const Device dev = rt.device("commfake:" + std::to_string(rank % 2)).value();
        Result<Communicator> comm = Communicator::create(dev, store, rank, kRanks, options);
        if (!comm.ok()) {
            failures[rank] = comm.error().message();
            return;
        }
        engines[rank] = comm->engine_kind();
        const Stream s = Stream::create(dev).value();
        results[rank] = all_reduce(*comm, s, iota(4, static_cast<float>(rank * 10)));
    });
    const std::vector<float> sum = {30.0f, 33.0f, 36.0f, 39.0f};
    for (int rank = 0; rank < kRanks; ++rank) {
        EXPECT_EQ(failures[rank], "") << "rank " << rank;
        EXPECT_EQ(engines[rank], CommEngine::generic_declined) << "rank " << rank;
        EXPECT_EQ(results[rank], sum) << "rank " << rank;
    }
}

// Two ranks of the fake engine (threads of this process, one fake device
// each), which, as NCCL, ends an operation whose peer never comes only at
// its own timeout. Rank 0's stream fails (a host function) before an
// all_reduce, which it therefore never hands to the engine; rank 1's
// matching all_reduce must not wait for its 20 s timeout: it fails within a
// fraction of it, naming rank 0 and the original error, and its output is
// never written. A clean all_reduce first shows the pair engine works.
TEST(CommNativeDispatch, AFailedStreamOnOneRankFailsThePeersNativeOperationPromptlyNamingTheCause) {
    const Runtime rt = fake_comm_runtime();
    const std::string dir = fresh_directory();
    const Store store = Store::file(dir).value();
    const CommOptions options = thread_group_options("pair-fails");
    std::vector<float> sums[2], outputs[2];
    std::string failures[2], errors[2];
    double rank1_seconds = 0;
    std::latch done(2);  // rank 0's failure stays posted until rank 1 read it
    on_rank_threads(2, [&](int rank) {
        const Device dev = rt.device("commfake:" + std::to_string(rank)).value();
        Result<Communicator> created = Communicator::create(dev, store, rank, 2, options);
        if (!created.ok() || !created->uses_native_engine()) {
            failures[rank] = created.ok() ? created->engine_description() : created.error().message();
            done.count_down();
            return;
        }
        const Communicator& comm = *created;
        const Stream s = Stream::create(dev).value();
        sums[rank] = all_reduce(comm, s, iota(4, static_cast<float>(rank * 10)));
        const std::vector<float> zeros(4, 0.0f);
        Buffer in = Buffer::allocate(s, 16).value();
        Buffer out = Buffer::allocate(s, 16).value();
        EXPECT_TRUE(s.copy(in.view(), iota(4, 1.0f)).ok());
        EXPECT_TRUE(s.copy(out.view(), zeros).ok());
        EXPECT_TRUE(s.synchronize().ok());
        const auto start = std::chrono::steady_clock::now();
        if (rank == 0) {
            std::shared_ptr<std::atomic<bool>> go = hold_until_set(s);
            EXPECT_TRUE(s.enqueue_host_func([]() -> Result<void> {
                             return Error(KEEL_STATUS_INTERNAL, "[test] the compute before the operation failed");
                         }).ok());
            std::thread release = set_soon(go);
            EXPECT_FALSE(comm.all_reduce(s, in.view(), out.view(), KEEL_DTYPE_F32, ReduceOp::sum).ok());
            release.join();
        } else {
            EXPECT_TRUE(comm.all_reduce(s, in.view(), out.view(), KEEL_DTYPE_F32, ReduceOp::sum).ok());
        }
        EXPECT_FALSE(s.synchronize().ok()) << "rank " << rank;
        if (rank == 1)
            rank1_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        errors[rank] = comm.error().ok() ? "ok" : comm.error().error().message();
        const Stream reader = Stream::create(dev).value();
        outputs[rank] = reader.copy_to_vector<float>(out.view()).value().get().value();
        done.arrive_and_wait();
    });
    for (int rank = 0; rank < 2; ++rank) {
        ASSERT_EQ(failures[rank], "") << "rank " << rank;
        EXPECT_EQ(sums[rank], (std::vector<float>{10.0f, 12.0f, 14.0f, 16.0f})) << "rank " << rank;
        EXPECT_EQ(outputs[rank], std::vector<float>(4, 0.0f)) << "rank " << rank << "'s output was written";
        EXPECT_NE(errors[rank].find("[test] the compute before the operation failed"), std::string::npos)
            << "rank " << rank << ": " << errors[rank];
    }
    EXPECT_NE(errors[1].find("rank 0 failed the communicator"), std::string::npos) << errors[1];
    // Its own timeout is 20 s; the watcher looks every 500 ms.
    EXPECT_LT(rank1_seconds, 10.0) << "rank 1 failed only at its timeout";
    // The posted failure went with rank 0's communicator, as the engine's keys did.
    EXPECT_EQ(files_in(dir), 0u) << "keys left in the store after the communicators went";
    std::filesystem::remove_all(dir);
}

// The native path on a mismatch: keel's size check is the generic path's
// (CommOptions::check_sizes), so what happens is the engine's. An engine
// that compares what the ranks enqueued (the fake one does) fails both
// ranks' streams, and keel's error() reports it on both with the engine's
// code, outputs untouched. (Before, the fake engine reduced an f32 and an
// i32 buffer as if both were the first's dtype: silent wrong data.)
TEST(CommNativeDispatch, DtypesOrCountsThatDifferOnTheNativePathFailBothRanksAndWriteNothing) {
    const Runtime rt = fake_comm_runtime();
    const std::string dir = fresh_directory();
    const Store store = Store::file(dir).value();
    struct Side {
        keel_dtype dtype;
        std::uint64_t bytes;
    };
    const std::pair<Side, Side> cases[] = {{{KEEL_DTYPE_F32, 16}, {KEEL_DTYPE_I32, 16}},
                                           {{KEEL_DTYPE_F32, 16}, {KEEL_DTYPE_F32, 20}}};
    int n = 0;
    for (const auto& [side0, side1] : cases) {
        const CommOptions options = thread_group_options("pair-mismatch-" + std::to_string(n++));
        std::string failures[2], errors[2], synced[2];
        keel_status codes[2] = {KEEL_STATUS_OK, KEEL_STATUS_OK};
        std::vector<std::uint8_t> outputs[2];
        on_rank_threads(2, [&](int rank) {
            const Device dev = rt.device("commfake:" + std::to_string(rank)).value();
            Result<Communicator> created = Communicator::create(dev, store, rank, 2, options);
            if (!created.ok() || !created->uses_native_engine()) {
                failures[rank] = created.ok() ? created->engine_description() : created.error().message();
                return;
            }
            const Side side = rank == 0 ? side0 : side1;
            const Stream s = Stream::create(dev).value();
            Buffer in = Buffer::allocate(s, side.bytes).value();
            Buffer out = Buffer::allocate(s, side.bytes).value();
            EXPECT_TRUE(s.memset(in.view(), 0x11).ok());
            EXPECT_TRUE(s.memset(out.view(), 0x5a).ok());
            EXPECT_TRUE(created->all_reduce(s, in.view(), out.view(), side.dtype, ReduceOp::sum).ok());
            const Result<void> sync = s.synchronize();
            synced[rank] = sync.ok() ? "ok" : sync.error().message();
            const Result<void> err = created->error();
            errors[rank] = err.ok() ? "ok" : err.error().message();
            codes[rank] = err.ok() ? KEEL_STATUS_OK : err.error().code();
            const Stream reader = Stream::create(dev).value();
            outputs[rank] = reader.copy_to_vector<std::uint8_t>(out.view()).value().get().value();
        });
        for (int rank = 0; rank < 2; ++rank) {
            ASSERT_EQ(failures[rank], "") << "rank " << rank;
            EXPECT_EQ(codes[rank], KEEL_STATUS_FAILED_PRECONDITION) << "rank " << rank << ": " << errors[rank];
            // The stream's error says how they differ (error() has its code).
            EXPECT_NE(synced[rank].find(side0.dtype == side1.dtype ? "5 x f32" : "4 x i32"), std::string::npos)
                << "rank " << rank << ": " << synced[rank];
            EXPECT_EQ(outputs[rank], std::vector<std::uint8_t>(outputs[rank].size(), 0x5a))
                << "rank " << rank << "'s output was written";
        }
    }
    std::filesystem::remove_all(dir);
}

// A store whose host hangs: once stuck, set and get block until released
// (erase still answers: the engine's keys are erased at destroy).
struct StuckStore {
    std::mutex mutex;
    std::condition_variable cv;
    bool stuck = false;
    void wait_while_stuck() {
        std::unique_lock lock(mutex);
        cv.wait(lock, [&] { return !stuck; });
    }
    void set_stuck(bool on) {
        {
            std::lock_guard lock(mutex);
            stuck = on;
        }
        cv.notify_all();
    }
};

// The store stops answering after the ranks met: abort() on rank 0 posts
// its failure within a bound instead of waiting for the store, and rank 1's
// communicator, whose watcher looks at the store, goes at once all the same.
TEST(CommNativeDispatch, AStoreThatStopsAnsweringHoldsUpNeitherAbortNorTheWatcher) {
    const Runtime rt = fake_comm_runtime();
    const std::string dir = fresh_directory();
    const Store file = Store::file(dir).value();
    auto state = std::make_shared<StuckStore>();  // shared with calls still blocked when the test ends
    const Store store =
        Store::callbacks(
            [file, state](std::string_view key, std::span<const std::byte> value) {
                state->wait_while_stuck();
                return file.set(key, value);
            },
            [file, state](std::string_view key, std::chrono::milliseconds timeout) {
                state->wait_while_stuck();
                return file.get(key, timeout);
            },
            [file](std::string_view key) { return file.erase(key); })
            .value();
    const CommOptions options = thread_group_options("stuck-store");
    double seconds[2] = {0, 0};  // rank 0: abort(); rank 1: its communicator going
    std::string failures[2], errors[2];
    std::latch met(2);
    on_rank_threads(2, [&](int rank) {
        const Device dev = rt.device("commfake:" + std::to_string(rank)).value();
        std::optional<Communicator> comm;
        if (Result<Communicator> created = Communicator::create(dev, store, rank, 2, options); created.ok())
            comm.emplace(std::move(created).value());
        else
            failures[rank] = created.error().message();
        met.arrive_and_wait();
        if (!comm) return;
        if (rank == 0) state->set_stuck(true);
        const auto start = std::chrono::steady_clock::now();
        if (rank == 0) comm->abort();
        errors[rank] = comm->error().ok() ? "ok" : comm->error().error().message();
        if (rank == 1) comm.reset();
        seconds[rank] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    });
    state->set_stuck(false);
    for (int rank = 0; rank < 2; ++rank) ASSERT_EQ(failures[rank], "") << "rank " << rank;
    EXPECT_NE(errors[0].find("aborted"), std::string::npos) << errors[0];
    // The bound is 500 ms; without one, abort() waits for the store forever.
    EXPECT_LT(seconds[0], 5.0) << "abort() waited for a store that does not answer";
    EXPECT_LT(seconds[1], 5.0) << "the communicator's watcher held up its destruction";
    // Calls released just now may still write there: no throw if they do.
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
}

// A communicator of one rank on cuda:0 through the CUDA plugin's NCCL
// entries. Skips, saying why, without a GPU, or when the plugin declined
// (NCCL not found: set KEEL_NCCL_LIBRARY).
class CommNativeNccl : public ::testing::Test {
protected:
    void SetUp() override {
        Result<Device> dev = rt_.device("cuda:0");
        if (!dev.ok()) GTEST_SKIP() << "no cuda:0 here: " << dev.error().message();
        dev_.emplace(*dev);
        KEEL_ASSERT_OK_AND_ASSIGN(Communicator comm,
                                  Communicator::create(*dev_, Store::file(fresh_directory()).value(), 0, 1));
        if (!comm.uses_native_engine()) GTEST_SKIP() << "cuda:0 has no NCCL path: " << comm.engine_description();
        comm_.emplace(std::move(comm));
    }

    const Device& device() const { return *dev_; }
    const Communicator& comm() const { return *comm_; }

private:
    Runtime rt_ = Runtime::create().value();
    std::optional<Device> dev_;
    std::optional<Communicator> comm_;
};

TEST_F(CommNativeNccl, AOneRankGroupOnCuda0RunsOnNccl) {
    const Communicator& comm = this->comm();
    const Stream s = Stream::create(device()).value();
    const std::vector<float> v = iota(1 << 20, 1.0f);
    EXPECT_EQ(all_reduce(comm, s, v), v);
    Buffer in = Buffer::allocate(s, 4096).value();
    Buffer out = Buffer::allocate(s, 4096).value();
    KEEL_ASSERT_OK(s.copy(in.view(), iota(1024, 3.0f)));
    KEEL_ASSERT_OK(comm.all_gather(s, in.view(), out.view()));
    KEEL_ASSERT_OK(comm.reduce_scatter(s, out.view(), in.view(), KEEL_DTYPE_F32, ReduceOp::avg));
    KEEL_ASSERT_OK(comm.broadcast(s, in.view(), out.view(), 0));
    EXPECT_EQ(s.copy_to_vector<float>(out.view()).value().get().value(), iota(1024, 3.0f));
    KEEL_ASSERT_OK(s.synchronize());
    KEEL_ASSERT_OK(comm.error());
}

// An NCCL operation still in flight when the communicator fails (here
// abort(); the watchdog's timeout takes the same path) fails its stream:
// synchronize, events recorded after it and later enqueues report it, an
// event recorded before it does not. The stream is held behind a host
// function so that the all_reduce is enqueued and not complete when
// abort() runs; a thread releases it (ncclCommAbort may wait for the
// device).
TEST_F(CommNativeNccl, AnNcclOperationInFlightWhenTheCommunicatorFailsFailsItsStream) {
    const Communicator& comm = this->comm();
    const Stream s = Stream::create(device()).value();
    if (!s.host_funcs_can_fail()) GTEST_SKIP() << "the plugin's streams cannot be failed by host functions";
    Buffer b = Buffer::allocate(s, 4096).value();
    KEEL_ASSERT_OK(s.memset(b.view(), 0));
    const Event before = Event::create(device()).value();
    KEEL_ASSERT_OK(before.record(s));
    std::atomic<bool> go{false};
    KEEL_ASSERT_OK(s.enqueue_host_func([&go](Status) {
        while (!go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }));
    KEEL_ASSERT_OK(comm.all_reduce(s, b.view(), KEEL_DTYPE_F32, ReduceOp::sum));
    const Event after = Event::create(device()).value();
    KEEL_ASSERT_OK(after.record(s));
    std::thread release([&go] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        go = true;
    });
    comm.abort();
    const Result<void> synced = s.synchronize();
    release.join();
    ASSERT_FALSE(synced.ok()) << "the stream reported success after its all_reduce was aborted";
    EXPECT_NE(synced.error().message().find("all_reduce"), std::string::npos) << synced.error().message();
    KEEL_EXPECT_OK(before.synchronize());
    EXPECT_FALSE(after.synchronize().ok()) << "an event recorded after the aborted all_reduce reports success";
    EXPECT_FALSE(s.memset(b.view(), 0).ok()) << "the failed stream accepted more work";
    EXPECT_FALSE(comm.error().ok()) << "error() is OK after the communicator failed";
}

// Two communicators on one stream: the first one's all_reduce fails while
// in flight (abort(); the watchdog's timeout takes the same path) and fails
// the stream at its point. CUDA still runs the second one's all_reduce,
// queued behind it, on what the failed one left: the second communicator
// must fail too (its watchdog aborts it), so its peers never take that for
// data, and its later operations are refused naming why.
TEST_F(CommNativeNccl, ACommunicatorWithAnOperationBehindAnotherOnesFailureOnItsStreamFailsToo) {
    const Communicator& first = this->comm();
    CommOptions options;
    options.key_prefix = "behind-another";
    KEEL_ASSERT_OK_AND_ASSIGN(Communicator second,
                              Communicator::create(device(), Store::file(fresh_directory()).value(), 0, 1, options));
    ASSERT_TRUE(second.uses_native_engine()) << second.engine_description();
    const Stream s = Stream::create(device()).value();
    const Stream later = Stream::create(device()).value();
    Buffer b = Buffer::allocate(s, 4096).value();
    Buffer c = Buffer::allocate(later, 4096).value();
    KEEL_ASSERT_OK(s.memset(b.view(), 0));
    KEEL_ASSERT_OK(later.memset(c.view(), 0));
    KEEL_ASSERT_OK(later.synchronize());
    std::atomic<bool> go{false};
    KEEL_ASSERT_OK(s.enqueue_host_func([&go](Status) {
        while (!go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }));
    KEEL_ASSERT_OK(first.all_reduce(s, b.view(), KEEL_DTYPE_F32, ReduceOp::sum));
    KEEL_ASSERT_OK(second.all_reduce(s, b.view(), KEEL_DTYPE_F32, ReduceOp::sum));
    std::thread release([&go] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        go = true;
    });
    first.abort();
    EXPECT_FALSE(s.synchronize().ok());
    release.join();
    // The second one's watchdog looks every few milliseconds.
    Result<void> refused = second.all_reduce(later, c.view(), KEEL_DTYPE_F32, ReduceOp::sum);
    for (int i = 0; i < 250 && refused.ok(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        refused = second.all_reduce(later, c.view(), KEEL_DTYPE_F32, ReduceOp::sum);
    }
    ASSERT_FALSE(refused.ok()) << "the communicator whose all_reduce ran behind another's failure stayed usable";
    EXPECT_NE(refused.error().message().find("its stream failed before it"), std::string::npos)
        << refused.error().message();
    (void)later.synchronize();
}

// keel.h: an operation's timeout counts from when its stream reaches it.
// An all_reduce queued behind work that takes longer than the timeout (a
// host function holding the stream for 2.5 s; the timeout is 1 s) is not
// declared dead by the watchdog: it runs once the stream gets there.
TEST_F(CommNativeNccl, AnOperationQueuedBehindWorkLongerThanItsTimeoutIsNotDeclaredDead) {
    CommOptions options;
    options.timeout = std::chrono::seconds(1);
    options.key_prefix = "queued-behind-work";
    KEEL_ASSERT_OK_AND_ASSIGN(Communicator comm,
                              Communicator::create(device(), Store::file(fresh_directory()).value(), 0, 1, options));
    ASSERT_TRUE(comm.uses_native_engine()) << comm.engine_description();
    const Stream s = Stream::create(device()).value();
    const std::vector<float> v = iota(1024, 1.0f);
    Buffer b = Buffer::allocate(s, v.size() * sizeof(float)).value();
    KEEL_ASSERT_OK(s.copy(b.view(), v));
    KEEL_ASSERT_OK(s.enqueue_host_func([](Status) { std::this_thread::sleep_for(std::chrono::milliseconds(2500)); }));
    KEEL_ASSERT_OK(comm.all_reduce(s, b.view(), KEEL_DTYPE_F32, ReduceOp::sum));
    KEEL_ASSERT_OK(s.synchronize());
    KEEL_EXPECT_OK(comm.error());
    EXPECT_EQ(s.copy_to_vector<float>(b.view()).value().get().value(), v);
}

}  // namespace
}  // namespace keel
