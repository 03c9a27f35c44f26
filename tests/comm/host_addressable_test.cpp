// The generic path on a device whose memory the host may dereference
// (KEEL_DEVICE_CAP_HOST_ADDRESSABLE: the fake plugin's): Gloo works on the
// device memory in place, with no staging copies. Two ranks are two threads
// of this process, one fake device each (the generic path forced: the fake
// engine would run a group of two itself); every collective, in and out of
// place, and a batched send and receive both ways.
#include <keel/comm.hpp>
#include <keel/keel.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace keel {
namespace {

struct RankResults {
    std::string engine;
    std::string failure;
    std::vector<float> sum_out, sum_in_place, bcast_out, bcast_in_place, gathered, scattered, received;
};

std::vector<float> values(std::size_t n, float first) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = first + static_cast<float>(i);
    return v;
}

// Device memory holding `v`.
Buffer upload(const Stream& s, const std::vector<float>& v) {
    Buffer b = Buffer::allocate(s, v.size() * sizeof(float)).value();
    s.copy(b.view(), v).value();
    return b;
}

std::vector<float> download(const Stream& s, const Buffer& b) {
    return s.copy_to_vector<float>(b.view()).value().get().value();
}

void run_rank(const Runtime& rt, const Store& store, int rank, RankResults& r) {
    const Device dev = rt.device("commfake:" + std::to_string(rank)).value();
    CommOptions options;
    options.key_prefix = "in-place";
    options.native = false;  // the generic path (the fake engine runs groups of two itself)
    options.timeout = std::chrono::milliseconds(20000);
    Result<Communicator> created = Communicator::create(dev, store, rank, 2, options);
    if (!created.ok()) {
        r.failure = created.error().message();
        return;
    }
    const Communicator& comm = *created;
    r.engine = comm.engine_description();
    const Stream s = Stream::create(dev).value();
    const float base = static_cast<float>(rank * 10);
    auto ok = [&](Result<void> done) {
        if (!done.ok() && r.failure.empty()) r.failure = done.error().message();
    };

    Buffer in = upload(s, values(6, base)), out = upload(s, std::vector<float>(6));
    ok(comm.all_reduce(s, in.view(), out.view(), KEEL_DTYPE_F32, ReduceOp::sum));
    r.sum_out = download(s, out);
    ok(comm.all_reduce(s, in.view(), KEEL_DTYPE_F32, ReduceOp::max));
    r.sum_in_place = download(s, in);

    Buffer root_in = upload(s, values(5, base + 1)), bout = upload(s, std::vector<float>(5));
    ok(comm.broadcast(s, root_in.view(), bout.view(), 1));
    r.bcast_out = download(s, bout);
    ok(comm.broadcast(s, root_in.view(), 0));
    r.bcast_in_place = download(s, root_in);

    Buffer part = upload(s, values(3, base)), all = upload(s, std::vector<float>(6));
    ok(comm.all_gather(s, part.view(), all.view()));
    r.gathered = download(s, all);

    Buffer whole = upload(s, values(4, base)), mine = upload(s, std::vector<float>(2));
    ok(comm.reduce_scatter(s, whole.view(), mine.view(), KEEL_DTYPE_F32, ReduceOp::sum));
    r.scattered = download(s, mine);

    Buffer sent = upload(s, values(7, base + 100)), got = upload(s, std::vector<float>(7));
    const P2P batch[] = {P2P::send(sent.view(), 1 - rank), P2P::recv(got.view(), 1 - rank)};
    ok(comm.send_recv(s, batch));
    r.received = download(s, got);
    ok(s.synchronize());
}

TEST(CommHostAddressable, GlooWorksOnTheDeviceMemoryInPlaceForEveryOperation) {
    RuntimeOptions options;
    options.plugin_path = {KEEL_FAKE_COMM_PLUGIN_DIR};
    options.use_env_plugin_path = false;
    const Runtime rt = Runtime::create(options).value();
    std::string dir = (std::filesystem::temp_directory_path() / "keel-in-place-XXXXXX").string();
    ASSERT_NE(::mkdtemp(dir.data()), nullptr);
    const Store store = Store::file(dir).value();
    RankResults results[2];
    std::vector<std::thread> ranks;
    for (int rank = 0; rank < 2; ++rank) ranks.emplace_back([&, rank] { run_rank(rt, store, rank, results[rank]); });
    for (std::thread& t : ranks) t.join();
    std::filesystem::remove_all(dir);

    for (int rank = 0; rank < 2; ++rank) {
        const RankResults& r = results[rank];
        ASSERT_EQ(r.failure, "") << "rank " << rank;
        EXPECT_NE(r.engine.find("in place (host-addressable)"), std::string::npos) << r.engine;
        EXPECT_EQ(r.sum_out, (std::vector<float>{10, 12, 14, 16, 18, 20})) << "rank " << rank;
        EXPECT_EQ(r.sum_in_place, values(6, 10)) << "rank " << rank;  // max of both ranks' inputs
        EXPECT_EQ(r.bcast_out, values(5, 11)) << "rank " << rank;       // rank 1's
        EXPECT_EQ(r.bcast_in_place, values(5, 1)) << "rank " << rank;   // rank 0's
        EXPECT_EQ(r.gathered, (std::vector<float>{0, 1, 2, 10, 11, 12})) << "rank " << rank;
        // Part `rank` of both ranks' inputs, summed: {0,1,2,3} + {10,11,12,13}.
        EXPECT_EQ(r.scattered, rank == 0 ? (std::vector<float>{10, 12}) : (std::vector<float>{14, 16}))
            << "rank " << rank;
        EXPECT_EQ(r.received, values(7, static_cast<float>((1 - rank) * 10 + 100))) << "rank " << rank;
    }
}

}  // namespace
}  // namespace keel
