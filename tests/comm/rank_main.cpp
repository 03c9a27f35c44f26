// keel_comm_rank: one rank of a multi-process test. The test (comm_test.cpp)
// starts N of these with RANK, WORLD_SIZE and KEEL_COMM_STORE set and a
// scenario name; each checks its own results, prints what went wrong, and
// exits 0 when everything held.
#include <keel/base/dtype.hpp>
#include <keel/comm.hpp>
#include <keel/environment.hpp>
#include <keel/keel.hpp>

#include <atomic>
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <netinet/in.h>
#include <optional>
#include <poll.h>
#include <random>
#include <span>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

int failures = 0;
// The device the ranks communicate through: "<scenario>@<device>" on the
// command line ("{rank}" in it stands for the rank), cpu:0 when not named.
std::string g_device = "cpu:0";

// The launcher's RANK, for messages.
std::string rank_name() { return std::string(keel::env::foreign("RANK").value_or("?")); }

#define CHECK(cond, ...)                                              \
    do {                                                              \
        if (!(cond)) {                                                \
            ++failures;                                               \
            std::fprintf(stderr, "rank %s: check failed: %s: ", rank_name().c_str(), #cond); \
            std::fprintf(stderr, __VA_ARGS__);                        \
            std::fprintf(stderr, "\n");                               \
        }                                                             \
    } while (0)

using keel::dtype_size;

// Encodes a small value exactly representable in `d` (integers, quarters).
void encode(keel_dtype d, double v, std::byte* out) {
    auto put = [&](auto x) { std::memcpy(out, &x, sizeof(x)); };
    switch (d) {
        case KEEL_DTYPE_F32: return put(static_cast<float>(v));
        case KEEL_DTYPE_F64: return put(v);
        case KEEL_DTYPE_I8: return put(static_cast<std::int8_t>(v));
        case KEEL_DTYPE_U8: return put(static_cast<std::uint8_t>(v));
        case KEEL_DTYPE_I32: return put(static_cast<std::int32_t>(v));
        case KEEL_DTYPE_U32: return put(static_cast<std::uint32_t>(v));
        case KEEL_DTYPE_I64: return put(static_cast<std::int64_t>(v));
        case KEEL_DTYPE_U64: return put(static_cast<std::uint64_t>(v));
        case KEEL_DTYPE_BF16: return put(static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(static_cast<float>(v)) >> 16));
        case KEEL_DTYPE_F16: {
            const std::uint32_t f = std::bit_cast<std::uint32_t>(static_cast<float>(v));
            std::uint16_t h = static_cast<std::uint16_t>((f >> 16) & 0x8000u);
            if ((f & 0x7fffffffu) != 0)
                h |= static_cast<std::uint16_t>(((((f >> 23) & 0xff) - 127 + 15) << 10) | ((f & 0x7fffffu) >> 13));
            return put(h);
        }
        default: return;
    }
}

bool is_int(keel_dtype d) {
    return d != KEEL_DTYPE_F16 && d != KEEL_DTYPE_BF16 && d != KEEL_DTYPE_F32 && d != KEEL_DTYPE_F64;
}

// Rank r's element i: 1..5 (1..2 for products, which must not overflow i8).
double input(int r, std::size_t i, keel::ReduceOp op) {
    if (op == keel::ReduceOp::prod) return static_cast<double>(((i + static_cast<std::size_t>(r)) % 2) + 1);
    return static_cast<double>(((i * 7 + static_cast<std::size_t>(r) * 3) % 5) + 1);
}

double expected(keel_dtype d, keel::ReduceOp op, int size, std::size_t i) {
    double acc = input(0, i, op);
    for (int r = 1; r < size; ++r) {
        const double v = input(r, i, op);
        switch (op) {
            case keel::ReduceOp::sum: case keel::ReduceOp::avg: acc += v; break;
            case keel::ReduceOp::prod: acc *= v; break;
            case keel::ReduceOp::max: acc = std::max(acc, v); break;
            case keel::ReduceOp::min: acc = std::min(acc, v); break;
        }
    }
    if (op == keel::ReduceOp::avg) acc = is_int(d) ? static_cast<double>(static_cast<long>(acc) / size) : acc / size;
    return acc;
}

std::vector<std::byte> make(keel_dtype d, std::size_t count, auto value) {
    std::vector<std::byte> bytes(count * dtype_size(d));
    for (std::size_t i = 0; i < count; ++i) encode(d, value(i), bytes.data() + i * dtype_size(d));
    return bytes;
}

struct Ctx {
    keel::Runtime runtime;
    keel::Device device;
    keel::Stream stream;
    int rank;
    int size;
};

Ctx context() {
    keel::Runtime runtime = keel::Runtime::create().value();
    keel::Device device = runtime.device(g_device).value();
    keel::Stream stream = keel::Stream::create(device).value();
    const keel::RankInfo info = keel::rank_from_env().value();
    return Ctx{std::move(runtime), device, std::move(stream), info.rank, info.size};
}

keel::CommOptions options(int timeout_ms) {
    keel::CommOptions o;
    o.timeout = std::chrono::milliseconds(timeout_ms);
    return o;
}

// A device buffer holding `bytes` (at least one byte, so empty views work).
keel::Buffer upload(const Ctx& c, const std::vector<std::byte>& bytes) {
    keel::Buffer b = keel::Buffer::allocate(c.stream, std::max<std::size_t>(bytes.size(), 1)).value();
    if (!bytes.empty()) c.stream.copy(b.view(0, bytes.size()).value(), bytes).value();
    return b;
}

std::vector<std::byte> download(const Ctx& c, keel::DeviceView v) {
    if (v.size() == 0) return {};
    return c.stream.copy_to_vector<std::byte>(v).value().get().value();
}

// A pending check: the output view and the bytes it must hold.
struct Expect {
    std::string what;
    keel::Buffer buffer;
    std::uint64_t bytes;
    std::vector<std::byte> want;
};

void verify(const Ctx& c, std::vector<Expect>& checks) {
    for (Expect& e : checks) {
        const std::vector<std::byte> got = download(c, e.buffer.view(0, e.bytes).value());
        std::size_t bad = 0;
        for (std::size_t i = 0; i < got.size(); ++i) bad += got[i] != e.want[i];
        CHECK(got.size() == e.want.size() && bad == 0, "%s: %zu wrong bytes of %zu", e.what.c_str(), bad,
              got.size());
    }
    checks.clear();
}

const keel_dtype kDtypes[] = {KEEL_DTYPE_F16, KEEL_DTYPE_BF16, KEEL_DTYPE_F32, KEEL_DTYPE_F64, KEEL_DTYPE_I8,
                              KEEL_DTYPE_I32, KEEL_DTYPE_I64, KEEL_DTYPE_U8, KEEL_DTYPE_U32, KEEL_DTYPE_U64};
const keel::ReduceOp kOps[] = {keel::ReduceOp::sum, keel::ReduceOp::prod, keel::ReduceOp::max, keel::ReduceOp::min,
                               keel::ReduceOp::avg};
const char* kOpNames[] = {"sum", "prod", "max", "min", "avg"};

// Every collective, every reduction, in and out of place, sizes 0, 1 and
// odd; `large`: every dtype, and 3 MiB for f32 sum; else four dtypes (one
// of each kind: 16-bit float, f32, signed and unsigned integers).
int collectives(bool large) {
    Ctx c = context();
    keel::Store store = keel::Store::from_env().value();
    keel::Communicator comm = keel::Communicator::create(c.device, store, c.rank, c.size, options(20000)).value();
    const int R = c.rank, N = c.size;
    std::vector<Expect> checks;
    for (keel_dtype d : kDtypes) {
        if (!large && d != KEEL_DTYPE_BF16 && d != KEEL_DTYPE_F32 && d != KEEL_DTYPE_I8 && d != KEEL_DTYPE_U64)
            continue;
        const std::size_t es = dtype_size(d);
        for (int k = 0; k < 5; ++k) {
            const keel::ReduceOp op = kOps[k];
            std::vector<std::size_t> counts = {0, 1, 37};
            if (large && d == KEEL_DTYPE_F32 && op == keel::ReduceOp::sum)
                counts.push_back((3u << 20) / es + 3);
            for (std::size_t count : counts) {
                const auto in = make(d, count, [&](std::size_t i) { return input(R, i, op); });
                const auto want = make(d, count, [&](std::size_t i) { return expected(d, op, N, i); });
                const std::string tag = std::string("dtype ") + std::to_string(d) + " " + kOpNames[k] + " x" +
                                        std::to_string(count);
                // all_reduce, out of place and in place
                keel::Buffer src = upload(c, in);
                keel::Buffer dst = upload(c, std::vector<std::byte>(in.size()));
                comm.all_reduce(c.stream, src.view(0, in.size()).value(), dst.view(0, in.size()).value(), d, op)
                    .value();
                checks.push_back({"all_reduce " + tag, std::move(dst), in.size(), want});
                comm.all_reduce(c.stream, src.view(0, in.size()).value(), d, op).value();
                checks.push_back({"all_reduce in place " + tag, std::move(src), in.size(), want});
                // reduce_scatter: part j of the input is the pattern shifted by j*count
                const auto rs_in = make(d, count * N, [&](std::size_t i) { return input(R, i, op); });
                const auto rs_want = make(d, count, [&](std::size_t i) { return expected(d, op, N, i + count * R); });
                keel::Buffer rs_src = upload(c, rs_in);
                keel::Buffer rs_dst = upload(c, std::vector<std::byte>(count * es));
                comm.reduce_scatter(c.stream, rs_src.view(0, rs_in.size()).value(),
                                    rs_dst.view(0, count * es).value(), d, op)
                    .value();
                checks.push_back({"reduce_scatter " + tag, std::move(rs_dst), count * es, rs_want});
            }
        }
        for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{37}}) {
            const std::string tag = std::string("dtype ") + std::to_string(d) + " x" + std::to_string(count);
            const std::uint64_t bytes = count * es;
            // broadcast from the last rank, out of place and in place
            const int root = N - 1;
            const auto mine = make(d, count, [&](std::size_t i) { return input(R, i, keel::ReduceOp::sum); });
            const auto roots = make(d, count, [&](std::size_t i) { return input(root, i, keel::ReduceOp::sum); });
            keel::Buffer b_src = upload(c, mine);
            keel::Buffer b_dst = upload(c, std::vector<std::byte>(bytes));
            comm.broadcast(c.stream, b_src.view(0, bytes).value(), b_dst.view(0, bytes).value(), root).value();
            checks.push_back({"broadcast " + tag, std::move(b_dst), bytes, roots});
            comm.broadcast(c.stream, b_src.view(0, bytes).value(), root).value();
            checks.push_back({"broadcast in place " + tag, std::move(b_src), bytes, roots});
            // all_gather
            std::vector<std::byte> all;
            for (int r = 0; r < N; ++r) {
                const auto part = make(d, count, [&](std::size_t i) { return input(r, i, keel::ReduceOp::sum); });
                all.insert(all.end(), part.begin(), part.end());
            }
            keel::Buffer g_src = upload(c, mine);
            keel::Buffer g_dst = upload(c, std::vector<std::byte>(bytes * N));
            comm.all_gather(c.stream, g_src.view(0, bytes).value(), g_dst.view(0, bytes * N).value()).value();
            checks.push_back({"all_gather " + tag, std::move(g_dst), bytes * N, all});
        }
        verify(c, checks);  // per dtype: bounded memory
    }
    CHECK(comm.error().ok(), "%s", comm.error().ok() ? "" : comm.error().error().message().c_str());
    return failures;
}

// Batched sends and receives: every rank sends to and receives from every
// other rank in one call (both ways at once), sizes 1, odd and 2 MiB.
int p2p() {
    Ctx c = context();
    keel::Communicator comm = keel::Communicator::create_from_env(c.device, options(20000)).value();
    const int R = c.rank, N = c.size;
    for (std::size_t bytes : {std::size_t{1}, std::size_t{1001}, std::size_t{2} << 20}) {
        std::vector<keel::P2P> ops;
        std::vector<keel::Buffer> recv_buffers;
        std::vector<keel::Buffer> send_buffers;
        for (int peer = 0; peer < N; ++peer) {
            if (peer == R) continue;
            std::vector<std::byte> data(bytes);
            for (std::size_t i = 0; i < bytes; ++i) data[i] = static_cast<std::byte>(R * 31 + peer * 7 + i);
            send_buffers.push_back(upload(c, data));
            recv_buffers.push_back(upload(c, std::vector<std::byte>(bytes)));
            // Receives listed first on even ranks, sends first on odd ones:
            // the batch progresses together either way.
            keel::P2P s = keel::P2P::send(send_buffers.back().view(0, bytes).value(), peer);
            keel::P2P r = keel::P2P::recv(recv_buffers.back().view(0, bytes).value(), peer);
            if (R % 2 == 0) {
                ops.push_back(r);
                ops.push_back(s);
            } else {
                ops.push_back(s);
                ops.push_back(r);
            }
        }
        // The sent buffers are handed over: the batch keeps them alive.
        comm.send_recv(c.stream, ops, std::move(send_buffers)).value();
        std::size_t k = 0;
        for (int peer = 0; peer < N; ++peer) {
            if (peer == R) continue;
            const auto got = download(c, recv_buffers[k++].view(0, bytes).value());
            std::size_t bad = 0;
            for (std::size_t i = 0; i < bytes; ++i) bad += got[i] != static_cast<std::byte>(peer * 31 + R * 7 + i);
            CHECK(bad == 0, "recv from %d, %zu bytes: %zu wrong", peer, bytes, bad);
        }
    }
    // A ring of single sends and receives, activation-style (Buffer&&).
    const int next = (R + 1) % N, prev = (R + N - 1) % N;
    if (N > 1) {
        keel::Buffer out = upload(c, std::vector<std::byte>(4096, static_cast<std::byte>(R + 1)));
        keel::Buffer in = upload(c, std::vector<std::byte>(4096));
        if (R % 2 == 0) {
            comm.send(c.stream, std::move(out), next).value();
            comm.recv(c.stream, in, prev).value();
        } else {
            comm.recv(c.stream, in, prev).value();
            comm.send(c.stream, std::move(out), next).value();
        }
        const auto got = download(c, in);
        CHECK(got[0] == static_cast<std::byte>(prev + 1) && got[4095] == static_cast<std::byte>(prev + 1),
              "ring recv from %d", prev);
    }
    CHECK(comm.error().ok(), "%s", comm.error().ok() ? "" : comm.error().error().message().c_str());
    return failures;
}

// Rank 1 dies after meeting; rank 0's next operation fails within the
// timeout, naming the operation and the communicator.
int killed_peer() {
    Ctx c = context();
    keel::Communicator comm = keel::Communicator::create_from_env(c.device, options(3000)).value();
    keel::Buffer b = upload(c, std::vector<std::byte>(1 << 16));
    // Met means both sides finished connecting: create may return on one
    // rank while the other still connects, so one operation completes
    // first (else rank 0's create, not its operation, meets the dead peer).
    comm.all_reduce(c.stream, b, KEEL_DTYPE_F32, keel::ReduceOp::sum).value();
    c.stream.synchronize().value();
    CHECK(comm.error().ok(), "the first all_reduce failed");
    if (c.rank == 1) ::_exit(0);
    const auto start = std::chrono::steady_clock::now();
    keel::Event before = keel::Event::create(c.device).value();
    before.record(c.stream).value();
    comm.all_reduce(c.stream, b, KEEL_DTYPE_F32, keel::ReduceOp::sum).value();
    keel::Event after = keel::Event::create(c.device).value();
    after.record(c.stream).value();
    keel::Result<void> synced = c.stream.synchronize();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    keel::Result<void> err = comm.error();
    CHECK(!err.ok(), "the operation with a dead peer succeeded");
    // The failure is the stream's sticky error, where the plugin allows it.
    if (c.stream.host_funcs_can_fail()) {
        CHECK(!synced.ok(), "the stream reported success after its all_reduce met a dead peer");
        CHECK(!after.synchronize().ok(), "an event recorded after the failed all_reduce reports success");
        CHECK(before.synchronize().ok(), "an event recorded before the all_reduce reports an error");
        CHECK(!c.stream.memset(b, 0).ok(), "the failed stream accepted more work");
    }
    for (const keel::Result<void>* r : {&err, &synced}) {
        if (r->ok()) continue;
        const std::string& m = r->error().message();
        std::fprintf(stderr, "error: %s\n", m.c_str());
        CHECK(m.find("all_reduce") != std::string::npos && m.find(comm.store_prefix()) != std::string::npos &&
                  m.find("peer") != std::string::npos,
              "message lacks the op, the communicator or the peer: %s", m.c_str());
    }
    CHECK(s < 6.0, "took %.1f s with a 3 s timeout", s);
    // Later operations fail at enqueue with the sticky error.
    CHECK(!comm.all_reduce(c.stream, b, KEEL_DTYPE_F32, keel::ReduceOp::sum).ok(), "enqueue after failure succeeded");
    return failures;
}

// WORLD_SIZE 2 but only this rank starts: create fails within the timeout.
int never_arrives() {
    Ctx c = context();
    const auto start = std::chrono::steady_clock::now();
    auto comm = keel::Communicator::create_from_env(c.device, options(1000));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(!comm.ok(), "create succeeded without the peer");
    if (!comm.ok()) {
        std::fprintf(stderr, "error: %s\n", comm.error().message().c_str());
        CHECK(comm.error().code() == KEEL_STATUS_UNAVAILABLE &&
                  comm.error().message().find("did not arrive") != std::string::npos,
              "%s", comm.error().message().c_str());
    }
    CHECK(s < 4.0, "took %.1f s with a 1 s timeout", s);
    return failures;
}

// Rank 0 waits for a message rank 1 never sends; abort() from another
// thread ends the wait long before the timeout.
int abort_unblocks() {
    Ctx c = context();
    keel::Communicator comm = keel::Communicator::create_from_env(c.device, options(30000)).value();
    keel::Store store = keel::Store::from_env().value();
    if (c.rank == 1) {
        // A receive rank 0 never sends for: it ends when rank 0 aborts, at
        // once, naming rank 0's abort (not a closed connection).
        keel::Buffer b = upload(c, std::vector<std::byte>(1024));
        comm.recv(c.stream, b, 0).value();
        const keel::Result<void> synced = c.stream.synchronize();
        const keel::Result<void> err = comm.error();
        CHECK(!err.ok() && err.error().message().find("rank 0 failed the communicator: [Communicator::abort]") !=
                               std::string::npos && err.error().message().find("aborted") != std::string::npos,
              "rank 1's error does not name rank 0's abort: %s", err.ok() ? "ok" : err.error().message().c_str());
        if (c.stream.host_funcs_can_fail()) CHECK(!synced.ok(), "rank 1's receive succeeded");
        // Stay connected until rank 0 is done, twice.
        (void)store.get("test/abort-done", std::chrono::milliseconds(20000));
        keel::Communicator coll = keel::Communicator::create_from_env(c.device, options(30000)).value();
        (void)store.get("test/abort-collective-done", std::chrono::milliseconds(20000));
        return failures;
    }
    keel::Buffer b = upload(c, std::vector<std::byte>(1024));
    const auto start = std::chrono::steady_clock::now();
    comm.recv(c.stream, b, 1).value();
    std::thread aborter([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        comm.abort();
    });
    keel::Result<void> synced = c.stream.synchronize();
    aborter.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(s < 5.0, "abort took %.1f s to end the wait", s);
    CHECK(!comm.error().ok() && comm.error().error().message().find("abort") != std::string::npos, "no abort error");
    if (c.stream.host_funcs_can_fail())
        CHECK(!synced.ok() && synced.error().message().find("abort") != std::string::npos &&
                  synced.error().message().find("recv from 1") != std::string::npos,
              "the stream does not report the aborted recv: %s",
              synced.ok() ? "ok" : synced.error().message().c_str());
    (void)store.set("test/abort-done", std::as_bytes(std::span("1", 1)));

    // A collective already inside Gloo (rank 1 never joins it): abort() ends
    // it long before its 30 s timeout.
    keel::Communicator coll = keel::Communicator::create_from_env(c.device, options(30000)).value();
    keel::Stream stream = keel::Stream::create(c.device).value();
    keel::Buffer data = keel::Buffer::allocate(stream, 4096).value();
    stream.memset(data, 0).value();
    const auto started = std::chrono::steady_clock::now();
    coll.all_reduce(stream, data, KEEL_DTYPE_F32, keel::ReduceOp::sum).value();
    std::thread collective_aborter([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        coll.abort();
    });
    keel::Result<void> coll_synced = stream.synchronize();
    collective_aborter.join();
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    CHECK(waited < 5.0, "abort took %.1f s to end a collective inside Gloo", waited);
    CHECK(!coll.error().ok(), "the aborted collective succeeded");
    if (stream.host_funcs_can_fail())
        CHECK(!coll_synced.ok() && coll_synced.error().message().find("all_reduce") != std::string::npos,
              "the stream does not report the aborted all_reduce: %s",
              coll_synced.ok() ? "ok" : coll_synced.error().message().c_str());
    (void)store.set("test/abort-collective-done", std::as_bytes(std::span("1", 1)));
    return failures;
}

// Sockets another thread of the process connects while the communicator
// connects are not the communicator's: abort() shuts down only its own,
// and every other connection still carries a byte afterwards.
int abort_own_sockets() {
    Ctx c = context();
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    CHECK(listener >= 0 && ::bind(listener, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
              ::listen(listener, 64) == 0 && ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0,
          "no loopback listener");
    // Connections opened without pause until the communicator is up; the
    // last ones kept (those opened while it connected among them).
    std::atomic<bool> stop{false};
    std::deque<std::pair<int, int>> others;  // connecting end, accepted end
    std::size_t opened = 0;
    std::thread opener([&] {
        while (!stop.load()) {
            const int client = ::socket(AF_INET, SOCK_STREAM, 0);
            if (::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
                ::close(client);
                continue;
            }
            others.emplace_back(client, ::accept(listener, nullptr, nullptr));
            ++opened;
            if (others.size() > 200) {
                ::close(others.front().first);
                ::close(others.front().second);
                others.pop_front();
            }
        }
    });
    keel::Communicator comm = keel::Communicator::create_from_env(c.device, options(10000)).value();
    stop = true;
    opener.join();
    keel::Buffer b = upload(c, std::vector<std::byte>(4096));
    comm.all_reduce(c.stream, b, KEEL_DTYPE_F32, keel::ReduceOp::sum).value();
    CHECK(c.stream.synchronize().ok(), "the all_reduce failed");
    comm.abort();
    int broken = 0;
    for (auto [client, accepted] : others) {
        const char sent = 'k';
        char got = 0;
        pollfd readable{accepted, POLLIN, 0};
        const bool carried = ::send(client, &sent, 1, MSG_NOSIGNAL) == 1 && ::poll(&readable, 1, 2000) == 1 &&
                             ::recv(accepted, &got, 1, 0) == 1 && got == sent;
        broken += carried ? 0 : 1;
        ::close(client);
        ::close(accepted);
    }
    std::fprintf(stderr, "rank %s: %zu connections opened meanwhile, the last %zu checked\n", rank_name().c_str(),
                 opened, others.size());
    CHECK(broken == 0, "abort() shut down %d of the %zu connections another thread opened", broken, others.size());
    ::close(listener);
    return failures;
}

// Rank 0 receives a large message from rank 1 and a small one from rank 2,
// which died: the batch fails while rank 1's bytes still stream into rank
// 0's staging, and rank 0 drops its stream and communicator at once. The
// staging Gloo fills must outlive Gloo's pairs (under ASan a write into
// freed staging would be reported: the recv() is intercepted).
int failed_mid_transfer() {
    Ctx c = context();
    keel::CommOptions o = options(10000);
    o.check_sizes = false;  // the size exchange would meet the dead peer before any data moved
    keel::Store store = keel::Store::from_env().value();
    constexpr std::size_t kLarge = std::size_t{64} << 20;
    {
        keel::Communicator comm = keel::Communicator::create_from_env(c.device, o).value();
        keel::Buffer one = upload(c, std::vector<std::byte>(4));
        comm.all_reduce(c.stream, one, KEEL_DTYPE_F32, keel::ReduceOp::sum).value();  // all connected
        CHECK(c.stream.synchronize().ok(), "the first all_reduce failed");
        if (c.rank == 2) {
            (void)store.set("test/rank2-leaving", std::as_bytes(std::span("1", 1)));
            ::_exit(0);
        }
        if (c.rank == 1) {
            keel::Buffer large = keel::Buffer::allocate(c.stream, kLarge).value();
            c.stream.memset(large, 7).value();
            comm.send(c.stream, large, 0).value();
            (void)c.stream.synchronize();  // fails once rank 0 is gone
            return 0;
        }
        (void)store.get("test/rank2-leaving", std::chrono::milliseconds(10000));
        // Gloo's loop sees rank 2's connection end.
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        keel::Stream stream = keel::Stream::create(c.device).value();
        keel::Buffer large = keel::Buffer::allocate(stream, kLarge).value();
        keel::Buffer small = keel::Buffer::allocate(stream, 8).value();
        const keel::P2P batch[] = {keel::P2P::recv(large, 1), keel::P2P::recv(small, 2)};
        // The batch may fail (and its stream refuse the rest of the enqueue)
        // before send_recv returns.
        (void)comm.send_recv(stream, batch);
        keel::Result<void> synced = stream.synchronize();
        CHECK(!comm.error().ok(), "a batch with a dead peer succeeded");
        if (stream.host_funcs_can_fail()) CHECK(!synced.ok(), "the stream reported success");
    }  // the stream, then the communicator, go while rank 1 still sends
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return failures;
}

// Bad input: clear errors, nothing enqueued.
int bad_input() {
    Ctx c = context();
    keel::Store store = keel::Store::from_env().value();
    auto expect_code = [](const keel::Result<void>& r, keel_status code, const char* what) {
        CHECK(!r.ok() && r.error().code() == code, "%s: %s", what, r.ok() ? "succeeded" : r.error().message().c_str());
    };
    {
        auto r = keel::Communicator::create(c.device, store, 2, 2);
        CHECK(!r.ok() && r.error().code() == KEEL_STATUS_INVALID_ARGUMENT, "rank >= size accepted");
    }
    {
        auto s = keel::Store::file("/nonexistent/keel-store");
        CHECK(!s.ok() && s.error().code() == KEEL_STATUS_UNAVAILABLE, "unreachable file store accepted");
        auto failing = keel::Store::callbacks(
            [](std::string_view, std::span<const std::byte>) -> keel::Result<void> {
                return keel::Error(KEEL_STATUS_UNAVAILABLE, "[test store] connection refused");
            },
            [](std::string_view, std::chrono::milliseconds) -> keel::Result<std::vector<std::byte>> {
                return keel::Error(KEEL_STATUS_UNAVAILABLE, "[test store] connection refused");
            }).value();
        auto r = keel::Communicator::create(c.device, failing, 0, 1, options(1000));
        CHECK(!r.ok() && r.error().message().find("connection refused") != std::string::npos,
              "a failing store: %s", r.ok() ? "succeeded" : r.error().message().c_str());
    }
    keel::Communicator comm = keel::Communicator::create(c.device, store, c.rank, c.size, options(5000)).value();
    keel::Buffer a = upload(c, std::vector<std::byte>(64));
    keel::Buffer b = upload(c, std::vector<std::byte>(128));
    expect_code(comm.all_reduce(c.stream, a, b, KEEL_DTYPE_F32, keel::ReduceOp::sum), KEEL_STATUS_INVALID_ARGUMENT,
                "all_reduce of 64 into 128 bytes");
    expect_code(comm.all_reduce(c.stream, a.view(0, 6).value(), KEEL_DTYPE_F32, keel::ReduceOp::sum),
                KEEL_STATUS_INVALID_ARGUMENT, "6 bytes of f32");
    expect_code(comm.all_reduce(c.stream, a, KEEL_DTYPE_INVALID, keel::ReduceOp::sum), KEEL_STATUS_INVALID_ARGUMENT,
                "invalid dtype");
    expect_code(comm.broadcast(c.stream, a, c.size), KEEL_STATUS_INVALID_ARGUMENT, "root >= size");
    expect_code(comm.send(c.stream, a, c.rank), KEEL_STATUS_INVALID_ARGUMENT, "send to self");
    expect_code(comm.send(c.stream, a, c.size), KEEL_STATUS_INVALID_ARGUMENT, "send to rank >= size");
    expect_code(comm.all_gather(c.stream, a, a), KEEL_STATUS_INVALID_ARGUMENT, "all_gather into too small");
    expect_code(comm.gather(c.stream, a, b, c.size), KEEL_STATUS_INVALID_ARGUMENT, "gather to root >= size");
    expect_code(comm.gather(c.stream, a, a, c.rank), KEEL_STATUS_INVALID_ARGUMENT, "gather into too small");
    expect_code(comm.scatter(c.stream, a, keel::DeviceView(), 0), KEEL_STATUS_INVALID_ARGUMENT,
                "scatter into an empty view");
    expect_code(comm.scatter(c.stream, b.view(0, 64).value(), b.view(0, 32).value(), c.rank),
                KEEL_STATUS_INVALID_ARGUMENT, "scatter with in and out overlapping");
    expect_code(comm.set_timeout(std::chrono::milliseconds(-1)), KEEL_STATUS_INVALID_ARGUMENT, "a negative timeout");
    keel::Stream emptied = keel::Stream::create(c.device).value();
    keel::Stream taken = std::move(emptied);  // leaves `emptied` empty
    expect_code(comm.all_reduce(emptied, a, KEEL_DTYPE_F32, keel::ReduceOp::sum), KEEL_STATUS_INVALID_ARGUMENT,
                "empty stream");
    // Memory keel does not know as this device's: a view with no device.
    expect_code(comm.all_reduce(c.stream, keel::DeviceView(), a, KEEL_DTYPE_F32, keel::ReduceOp::sum),
                KEEL_STATUS_INVALID_ARGUMENT, "a view of no device");
    // An empty view (no device) is refused whatever its size, as by every
    // other keel call.
    expect_code(comm.all_reduce(c.stream, keel::DeviceView(), KEEL_DTYPE_F32, keel::ReduceOp::sum),
                KEEL_STATUS_INVALID_ARGUMENT, "all_reduce of an empty view");
    expect_code(comm.send(c.stream, keel::DeviceView(), 1 - c.rank), KEEL_STATUS_INVALID_ARGUMENT,
                "send of an empty view");
    expect_code(comm.broadcast(c.stream, keel::DeviceView(), 0), KEEL_STATUS_INVALID_ARGUMENT,
                "broadcast into an empty view");
    CHECK(comm.error().ok(), "a refused call made a sticky error");
    // Still usable afterwards.
    comm.all_reduce(c.stream, a, KEEL_DTYPE_F32, keel::ReduceOp::sum).value();
    CHECK(c.stream.synchronize().ok() && comm.error().ok(), "all_reduce after refused calls failed");
    // A moved-from communicator refuses every call (it crashed: SIGSEGV);
    // the one it moved into works on.
    keel::Communicator moved = std::move(comm);
    expect_code(comm.all_reduce(c.stream, a, KEEL_DTYPE_F32, keel::ReduceOp::sum), KEEL_STATUS_FAILED_PRECONDITION,
                "all_reduce on a moved-from communicator");
    expect_code(comm.send(c.stream, a, 1 - c.rank), KEEL_STATUS_FAILED_PRECONDITION, "send on a moved-from one");
    expect_code(comm.gather(c.stream, a, b, 0), KEEL_STATUS_FAILED_PRECONDITION, "gather on a moved-from one");
    expect_code(comm.error(), KEEL_STATUS_FAILED_PRECONDITION, "error() of a moved-from one");
    comm.abort();  // nothing to abort
    moved.all_reduce(c.stream, a, KEEL_DTYPE_F32, keel::ReduceOp::sum).value();
    CHECK(c.stream.synchronize().ok() && moved.error().ok(), "the communicator moved into failed");
    return failures;
}

// Counts that differ between ranks end in an error on every rank (within
// the timeout), not a hang.
int mismatched_counts() {
    Ctx c = context();
    keel::Communicator comm = keel::Communicator::create_from_env(c.device, options(2000)).value();
    keel::Buffer b = upload(c, std::vector<std::byte>(4096 * (c.rank + 1)));
    comm.all_reduce(c.stream, b, KEEL_DTYPE_F32, keel::ReduceOp::sum).value();
    (void)c.stream.synchronize();
    CHECK(!comm.error().ok(), "mismatched all_reduce succeeded");
    if (const keel::Result<void> failed = comm.error(); !failed.ok()) {
        // The caller's mistake, not the network's; dtypes by name.
        const keel::Error& e = failed.error();
        std::fprintf(stderr, "error: %s\n", e.message().c_str());
        CHECK(e.code() == KEEL_STATUS_FAILED_PRECONDITION, "mismatched counts: %s, not FAILED_PRECONDITION",
              keel::status_name(e.code()));
        CHECK(e.message().find("f32 sum") != std::string::npos, "the dtype is not named: %s", e.message().c_str());
    }

    // A receive smaller than its send: an error on both sides, not a process
    // stopped inside Gloo. A fresh communicator and stream (the first failed).
    keel::Communicator p2p = keel::Communicator::create_from_env(c.device, options(2000)).value();
    keel::Stream stream = keel::Stream::create(c.device).value();
    keel::Buffer m = keel::Buffer::allocate(stream, c.rank == 0 ? 4096 : 1024).value();
    stream.memset(m, 1).value();
    if (c.rank == 0)
        p2p.send(stream, m, 1).value();
    else
        p2p.recv(stream, m, 0).value();
    keel::Result<void> synced = stream.synchronize();
    const keel::Result<void> err = p2p.error();
    CHECK(!err.ok(), "a recv smaller than its send succeeded");
    if (!err.ok()) {
        std::fprintf(stderr, "error: %s\n", err.error().message().c_str());
        CHECK(err.error().code() == KEEL_STATUS_FAILED_PRECONDITION, "mismatched sizes: %s, not FAILED_PRECONDITION",
              keel::status_name(err.error().code()));
        CHECK(err.error().message().find("4096") != std::string::npos &&
                  err.error().message().find("1024") != std::string::npos &&
                  err.error().message().find("peer") != std::string::npos,
              "the message names neither both sizes nor the peer: %s", err.error().message().c_str());
    }
    if (stream.host_funcs_can_fail()) CHECK(!synced.ok(), "the stream of the mismatched send/recv reports success");

    // Roots that differ in a gather (a batch of sends and receives): both
    // ranks think they are the root and wait for a send that never comes.
    // Compared like a collective's signature: FAILED_PRECONDITION at once on
    // every rank, naming the roots (before: UNAVAILABLE at the timeout).
    keel::Communicator rooted = keel::Communicator::create_from_env(c.device, options(20000)).value();
    keel::Stream s3 = keel::Stream::create(c.device).value();
    keel::Buffer part = keel::Buffer::allocate(s3, 64).value();
    keel::Buffer whole = keel::Buffer::allocate(s3, 64 * c.size).value();
    const auto start = std::chrono::steady_clock::now();
    rooted.gather(s3, part, whole, c.rank).value();
    (void)s3.synchronize();
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const keel::Result<void> rooted_err = rooted.error();
    CHECK(!rooted_err.ok(), "a gather whose roots differ succeeded");
    if (!rooted_err.ok()) {
        std::fprintf(stderr, "error: %s\n", rooted_err.error().message().c_str());
        CHECK(rooted_err.error().code() == KEEL_STATUS_FAILED_PRECONDITION && took < 15.0,
              "roots that differ: %s after %.1f s, not FAILED_PRECONDITION before the timeout",
              keel::status_name(rooted_err.error().code()), took);
        CHECK(rooted_err.error().message().find("gather") != std::string::npos &&
                  rooted_err.error().message().find("(root " + std::to_string(1 - c.rank) + ")") != std::string::npos,
              "the gather or the peer's root is not named: %s", rooted_err.error().message().c_str());
    }
    return failures;
}

// Three ranks: 0 sends rank 1 more than it receives; rank 2 is in neither.
// Then every rank enqueues an all_reduce: ranks 0 and 1 refuse it (their
// communicator failed), and rank 2's must fail at once as a mismatch
// (FAILED_PRECONDITION naming it), not wait for its timeout (it did: the
// mismatch failed only the two ranks in it). Ranks 0 and 1 stay until rank
// 2 is done, so their exit does not end its wait.
int mismatch_seen_by_all() {
    Ctx c = context();
    keel::Store store = keel::Store::from_env().value();
    keel::Communicator comm = keel::Communicator::create(c.device, store, c.rank, c.size, options(20000)).value();
    keel::Buffer m = upload(c, std::vector<std::byte>(c.rank == 0 ? 256 : 128));
    if (c.rank == 0) comm.send(c.stream, m, 1).value();
    if (c.rank == 1) comm.recv(c.stream, m, 0).value();
    (void)c.stream.synchronize();
    const auto start = std::chrono::steady_clock::now();
    keel::Stream fresh = keel::Stream::create(c.device).value();  // c.stream failed on ranks 0 and 1
    keel::Buffer b = keel::Buffer::allocate(fresh, 64).value();
    (void)fresh.memset(b, 0);
    const keel::Result<void> enqueued = comm.all_reduce(fresh, b, KEEL_DTYPE_F32, keel::ReduceOp::sum);
    (void)fresh.synchronize();
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const keel::Result<void> err = comm.error();
    CHECK(!err.ok(), "the communicator did not fail");
    if (!err.ok()) {
        std::fprintf(stderr, "error: %s\n", err.error().message().c_str());
        CHECK(err.error().code() == KEEL_STATUS_FAILED_PRECONDITION, "%s, not FAILED_PRECONDITION",
              keel::status_name(err.error().code()));
        CHECK(err.error().message().find("the sizes of a send and its receive") != std::string::npos,
              "the mismatch is not named: %s", err.error().message().c_str());
    }
    CHECK(c.rank == 2 ? enqueued.ok() : !enqueued.ok(), "rank %d's all_reduce %s", c.rank,
          enqueued.ok() ? "was enqueued" : "was refused");
    CHECK(took < 10.0, "rank %d's all_reduce failed after %.1f s (its timeout is 20 s)", c.rank, took);
    const std::byte one{1};
    if (c.rank == 2) (void)store.set("test/third-done", std::span(&one, 1));
    else (void)store.get("test/third-done", std::chrono::seconds(30));
    return failures;
}

// A peer that sent its last message and exited is no failure: rank 0
// receives from ranks 2 and 1 in one batch (2 first, 2 sends 400 ms late);
// rank 1 sends and exits at once. Rank 0's receive from 1 completed, but
// the end of rank 1's connection woke it before rank 0 waited for it, and
// it failed as "woken before it completed" (seen under load as a flake of
// the four-rank batch test, where ranks exit as soon as they are done).
int peer_left_after_sending() {
    Ctx c = context();
    keel::Communicator comm = keel::Communicator::create_from_env(c.device, options(20000)).value();
    const std::size_t bytes = 64 << 10;
    keel::Buffer from1 = upload(c, std::vector<std::byte>(bytes));
    keel::Buffer from2 = upload(c, std::vector<std::byte>(bytes));
    if (c.rank == 0) {
        const std::vector<keel::P2P> ops = {keel::P2P::recv(from2, 2), keel::P2P::recv(from1, 1)};
        comm.send_recv(c.stream, ops).value();
        const keel::Result<void> synced = c.stream.synchronize();
        CHECK(synced.ok(), "%s", synced.ok() ? "" : synced.error().message().c_str());
        if (synced.ok()) {
            const auto one = download(c, from1);
            const auto two = download(c, from2);
            CHECK(one == std::vector<std::byte>(bytes, std::byte{1}) && two == std::vector<std::byte>(bytes, std::byte{2}),
                  "wrong data received");
        }
        return failures;
    }
    keel::Buffer mine = upload(c, std::vector<std::byte>(bytes, static_cast<std::byte>(c.rank)));
    if (c.rank == 2)
        c.stream.enqueue_host_func([] { std::this_thread::sleep_for(std::chrono::milliseconds(400)); }).value();
    comm.send(c.stream, mine, 0).value();
    c.stream.synchronize().value();
    return failures;  // rank 1 leaves at once
}

// Two processes claim rank 0 (the test starts ranks 0, 0, 1 of size 2).
// The one that comes second is refused; the test checks that one was.
int duplicate_rank() {
    Ctx c = context();
    auto comm = keel::Communicator::create_from_env(c.device, options(3000));
    if (!comm.ok()) {
        std::fprintf(stderr, "error: %s\n", comm.error().message().c_str());
        // comm.hpp: FAILED_PRECONDITION when two processes claim one rank.
        return comm.error().code() == KEEL_STATUS_FAILED_PRECONDITION &&
                       comm.error().message().find("claimed") != std::string::npos
                   ? 3
                   : 1;
    }
    // The claim is held while the communicator lives: keep it for as long as
    // the other claimant may take to start (a sanitizer build starts slowly).
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
    return 0;
}

// Meets the peers that never come with a long timeout: the test kills it
// while it waits, leaving its keys in the store as a dead job does.
int dies_while_meeting() {
    Ctx c = context();
    auto comm = keel::Communicator::create_from_env(c.device, options(60000));
    return comm.ok() ? 1 : 2;
}

// A job killed after its ranks met: rank 1 dies (SIGKILL) holding its
// claim; rank 0 ends cleanly.
int killed_after_meeting() {
    Ctx c = context();
    auto comm = keel::Communicator::create_from_env(c.device, options(30000));
    CHECK(comm.ok(), "%s", comm.ok() ? "" : comm.error().message().c_str());
    if (!comm.ok()) return failures;
    CHECK(comm->barrier(c.stream).ok() && c.stream.synchronize().ok(), "the barrier failed");
    if (c.rank == 1) ::raise(SIGKILL);
    return failures;
}

// The store holds keys of a job that died while meeting (the test ran
// dies_while_meeting before): create fails at once, saying so.
int stale_job() {
    Ctx c = context();
    const auto start = std::chrono::steady_clock::now();
    auto comm = keel::Communicator::create_from_env(c.device, options(5000));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(!comm.ok(), "create succeeded over a dead job's keys");
    if (!comm.ok()) {
        std::fprintf(stderr, "error: %s\n", comm.error().message().c_str());
        CHECK(comm.error().code() == KEEL_STATUS_FAILED_PRECONDITION &&
                  comm.error().message().find("has ended") != std::string::npos,
              "%s", comm.error().message().c_str());
    }
    CHECK(s < 4.0, "took %.1f s to tell", s);
    return failures;
}

// Two processes claim rank 1: the first (the one whose claim of the role key
// went through) meets rank 0 and lets its communicator go; then the second
// claims rank 1 while rank 0's communicator still lives. It is refused at
// once, FAILED_PRECONDITION, saying the job's communicator completed, not
// left waiting for peers that will never arrive again. The order comes from
// keys in the job's own store, so nothing depends on timing.
int late_claimant() {
    Ctx c = context();
    const keel::Store store = keel::Store::from_env().value();
    const auto mark = [&](const char* key) { (void)store.set(key, std::as_bytes(std::span("x", 1))); };
    const auto wait_for = [&](const char* key) { return store.get(key, std::chrono::seconds(60)).ok(); };
    const bool late = c.rank == 1 && !store.set("test/role/1", std::as_bytes(std::span("x", 1))).ok();
    if (late) {
        CHECK(wait_for("test/released"), "the first rank 1 never let its communicator go");
        auto comm = keel::Communicator::create_from_env(c.device, options(5000));
        CHECK(!comm.ok(), "a late process claimed rank 1 of a communicator that had completed");
        if (!comm.ok()) {
            std::fprintf(stderr, "late process: %s\n", comm.error().message().c_str());
            CHECK(comm.error().code() == KEEL_STATUS_FAILED_PRECONDITION &&
                      comm.error().message().find("already completed") != std::string::npos,
                  "%s", comm.error().message().c_str());
        }
        mark("test/late-done");
        return failures;
    }
    {
        keel::Communicator comm = keel::Communicator::create_from_env(c.device, options(20000)).value();
        const auto in = make(KEEL_DTYPE_I32, 2, [&](std::size_t i) { return static_cast<double>(i + c.rank); });
        keel::Buffer b = upload(c, in);
        comm.all_reduce(c.stream, b, KEEL_DTYPE_I32, keel::ReduceOp::sum).value();
        CHECK(download(c, b) == make(KEEL_DTYPE_I32, 2, [](std::size_t i) { return static_cast<double>(2 * i + 1); }),
              "all_reduce before the late process");
        if (c.rank == 0) CHECK(wait_for("test/late-done"), "the late process never finished");
    }
    if (c.rank == 1) {
        mark("test/released");
    } else {
        for (const char* key : {"test/role/1", "test/released", "test/late-done"}) (void)store.erase(key);
    }
    return failures;
}

// 200 communicators made and dropped in a row, each checked by one
// all_reduce every 20th; the test counts the keys left in the store.
int many_communicators() {
    Ctx c = context();
    keel::Store store = keel::Store::from_env().value();
    for (int i = 0; i < 200; ++i) {
        keel::Communicator comm = keel::Communicator::create(c.device, store, c.rank, c.size, options(20000)).value();
        if (i % 20 != 0) continue;
        keel::Buffer b = upload(c, make(KEEL_DTYPE_I32, 4, [&](std::size_t k) { return static_cast<double>(k + c.rank); }));
        comm.all_reduce(c.stream, b, KEEL_DTYPE_I32, keel::ReduceOp::sum).value();
        CHECK(download(c, b) == make(KEEL_DTYPE_I32, 4, [&](std::size_t k) {
                  return static_cast<double>(c.size * k + c.size * (c.size - 1) / 2);
              }),
              "all_reduce of communicator %d", i);
    }
    return failures;
}

// Not a test: how long Communicator::create takes, 30 in a row after one
// warm-up, through the store KEEL_COMM_STORE names; rank 0 prints the
// median and the fastest (the comm README's create-time figures).
int create_time() {
    Ctx c = context();
    keel::Store store = keel::Store::from_env().value();
    std::vector<double> ms;
    for (int i = 0; i < 31; ++i) {
        const auto start = std::chrono::steady_clock::now();
        keel::Communicator comm = keel::Communicator::create(c.device, store, c.rank, c.size, options(30000)).value();
        if (i > 0) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    if (c.rank == 0)
        std::printf("create on %d ranks: median %.2f ms, fastest %.2f ms (%zu creates)\n", c.size, ms[ms.size() / 2],
                    ms.front(), ms.size());
    return 0;
}

// The store cannot be reached (MASTER_ADDR:MASTER_PORT where nothing
// listens): a clear UNAVAILABLE within the 2 s timeout.
int unreachable_store() {
    Ctx c = context();
    const auto start = std::chrono::steady_clock::now();
    auto comm = keel::Communicator::create_from_env(c.device, options(2000));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(!comm.ok(), "create succeeded without a store");
    if (!comm.ok()) {
        std::fprintf(stderr, "error: %s\n", comm.error().message().c_str());
        CHECK(comm.error().code() == KEEL_STATUS_UNAVAILABLE &&
                  comm.error().message().find("cannot reach the store") != std::string::npos &&
                  comm.error().message().find("MASTER_ADDR") != std::string::npos,
              "%s", comm.error().message().c_str());
    }
    CHECK(s >= 1.5 && s < 5.0, "took %.1f s with a 2 s timeout", s);
    return failures;
}

// One all_reduce through the store KEEL_COMM_STORE names (the Redis test).
int one_all_reduce() {
    Ctx c = context();
    keel::Communicator comm = keel::Communicator::create_from_env(c.device, options(10000)).value();
    const auto in = make(KEEL_DTYPE_I64, 3, [&](std::size_t i) { return static_cast<double>(i + 10 * c.rank); });
    const auto want = make(KEEL_DTYPE_I64, 3, [&](std::size_t i) {
        return static_cast<double>(c.size * i + 10 * c.size * (c.size - 1) / 2);
    });
    keel::Buffer b = upload(c, in);
    comm.all_reduce(c.stream, b, KEEL_DTYPE_I64, keel::ReduceOp::sum).value();
    CHECK(download(c, b) == want, "all_reduce through the store");
    return failures;
}

// What an application's store binding touches (its interpreter, its
// logger): state that exit destroys.
struct AppState {
    std::unique_ptr<std::string> log = std::make_unique<std::string>();
};
// Exit that takes a while after the application's state went (a logger
// flushing, a framework's cleanup): here, until the store call returned.
struct SlowExit {
    std::atomic<bool> call_pending{false};
    ~SlowExit() {
        for (int i = 0; i < 300 && call_pending.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
};

// A store call that outlives its bound, then the process returns from main
// while the call still runs: the failure notice's set blocks past its bound
// (500 ms) after abort() on rank 0 (and the failure it causes on rank 1),
// then touches the application's state. Exit must wait for it (or never let
// it return into exit's destructors): before, it woke after the state was
// destroyed, and the rank died of SIGSEGV.
int exit_while_store_blocks() {
    static SlowExit slow_exit;  // made first: destroyed last
    static AppState app;
    Ctx c = context();
    keel::Store files = keel::Store::from_env().value();
    auto blocking = std::make_shared<std::atomic<bool>>(false);
    keel::Store store = keel::Store::callbacks(
        [files, blocking](std::string_view key, std::span<const std::byte> value) -> keel::Result<void> {
            if (blocking->load() && key.ends_with("/failed")) {
                slow_exit.call_pending = true;
                std::this_thread::sleep_for(std::chrono::milliseconds(600));
                app.log->append(key);  // the application's state, as its binding's would be
                slow_exit.call_pending = false;
            }
            return files.set(key, value);
        },
        [files](std::string_view key, std::chrono::milliseconds timeout) { return files.get(key, timeout); },
        [files](std::string_view key) { return files.erase(key); }).value();
    keel::Communicator comm = keel::Communicator::create(c.device, store, c.rank, c.size, options(10000)).value();
    blocking->store(true);
    if (c.rank == 0) {
        comm.abort();
    } else {
        keel::Buffer b = upload(c, std::vector<std::byte>(64));
        (void)comm.all_reduce(c.stream, b, KEEL_DTYPE_F32, keel::ReduceOp::sum);
        (void)c.stream.synchronize();
    }
    CHECK(!comm.error().ok(), "the communicator did not fail");
    return failures;
}

// The interface is chosen by name: an unknown one is a clear error at
// create, the loopback one ("lo") works.
int interface_by_name() {
    Ctx c = context();
    keel::Store store = keel::Store::from_env().value();
    keel::CommOptions bad = options(5000);
    bad.interface = "nosuch0";
    auto refused = keel::Communicator::create(c.device, store, c.rank, c.size, bad);
    CHECK(!refused.ok() && refused.error().message().find("nosuch0") != std::string::npos,
          "unknown interface: %s", refused.ok() ? "accepted" : refused.error().message().c_str());
    keel::CommOptions lo = options(5000);
    lo.interface = "lo";
    keel::Communicator comm = keel::Communicator::create(c.device, store, c.rank, c.size, lo).value();
    const auto in = make(KEEL_DTYPE_I32, 5, [&](std::size_t i) { return static_cast<double>(i + c.rank); });
    const auto want = make(KEEL_DTYPE_I32, 5, [&](std::size_t i) { return static_cast<double>(2 * i + 1); });
    keel::Buffer b = upload(c, in);
    comm.all_reduce(c.stream, b, KEEL_DTYPE_I32, keel::ReduceOp::sum).value();
    CHECK(download(c, b) == want, "all_reduce over lo");
    return failures;
}

// Two hosts: each rank in its own network namespace, joined by a veth pair,
// listening on the interface KEEL_TEST_IFACE names.
int two_hosts() {
    Ctx c = context();
    keel::CommOptions o = options(10000);
    o.interface = std::string(keel::env::text(keel::env::Var::test_iface).value_or(""));
    keel::Communicator comm = keel::Communicator::create_from_env(c.device, o).value();
    const auto in = make(KEEL_DTYPE_F32, 1001, [&](std::size_t i) { return input(c.rank, i, keel::ReduceOp::sum); });
    const auto want = make(KEEL_DTYPE_F32, 1001, [&](std::size_t i) { return expected(KEEL_DTYPE_F32, keel::ReduceOp::sum, c.size, i); });
    keel::Buffer b = upload(c, in);
    comm.all_reduce(c.stream, b, KEEL_DTYPE_F32, keel::ReduceOp::sum).value();
    CHECK(download(c, b) == want, "all_reduce between the namespaces");
    return failures;
}

// Under the CPU checker (KEEL_CHECK=1, random delays): activations moved
// into sends right after they were computed and dropped by the caller are
// freed only after their sends ran (no finding), and arrive intact.
int checker_hold() {
    Ctx c = context();
    keel::Communicator comm = keel::Communicator::create_from_env(c.device, options(20000)).value();
    keel::Stream comm_stream = keel::Stream::create(c.device).value();
    keel::Kernel fill = keel::Kernel::find(c.device, "fill").value();
    constexpr int kSends = 16;
    constexpr std::uint64_t kBytes = 64 << 10;
    if (c.rank == 0) {
        for (int i = 0; i < kSends; ++i) {
            keel::Buffer b = keel::Buffer::allocate(c.stream, kBytes).value();
            c.stream.launch(fill, keel::KernelArgs().buffer(b, KEEL_DTYPE_F32).scalar(static_cast<float>(i))).value();
            comm_stream.order_after(c.stream).value();
            comm.send(comm_stream, std::move(b), 1).value();
        }
    } else {
        std::vector<keel::Buffer> got;
        for (int i = 0; i < kSends; ++i) {
            got.push_back(keel::Buffer::allocate(comm_stream, kBytes).value());
            comm.recv(comm_stream, got.back(), 0).value();
        }
        for (int i = 0; i < kSends; ++i) {
            const auto v = comm_stream.copy_to_vector<float>(got[static_cast<std::size_t>(i)]).value().get().value();
            CHECK(v.front() == static_cast<float>(i) && v.back() == static_cast<float>(i), "send %d arrived as %f", i,
                  static_cast<double>(v.front()));
        }
    }
    auto synced = comm_stream.synchronize();
    CHECK(synced.ok(), "comm stream: %s", synced.ok() ? "" : synced.error().message().c_str());
    auto computed = c.stream.synchronize();
    CHECK(computed.ok(), "compute stream: %s", computed.ok() ? "" : computed.error().message().c_str());
    CHECK(comm.error().ok(), "%s", comm.error().ok() ? "" : comm.error().error().message().c_str());
    return failures;
}

// Under the CPU checker: a send buffer written on the compute stream while
// its send (on the comm stream) may still read it is reported: the write is
// refused with a race naming both.
int checker_reuse() {
    Ctx c = context();
    keel::Store store = keel::Store::from_env().value();
    keel::Communicator comm = keel::Communicator::create_from_env(c.device, options(20000)).value();
    keel::Stream comm_stream = keel::Stream::create(c.device).value();
    keel::Kernel fill = keel::Kernel::find(c.device, "fill").value();
    keel::Buffer b = keel::Buffer::allocate(c.stream, 4096).value();
    if (c.rank == 0) {
        c.stream.launch(fill, keel::KernelArgs().buffer(b, KEEL_DTYPE_F32).scalar(1.0f)).value();
        comm_stream.order_after(c.stream).value();
        // The comm stream is held until the overwrite was enqueued, so the
        // send's read is still pending then whatever the delays: without
        // this, 1 run in 5 under ASan saw the overwrite accepted, the read
        // having run already.
        auto release = std::make_shared<std::atomic<bool>>(false);
        comm_stream
            .enqueue_host_func([release] {
                const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
                while (!release->load() && std::chrono::steady_clock::now() < end)
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
            })
            .value();
        comm.send(comm_stream, b, 1).value();
        // The bug: the next micro-batch overwrites the buffer on the
        // compute stream, not ordered after the send.
        auto reuse = c.stream.launch(fill, keel::KernelArgs().buffer(b, KEEL_DTYPE_F32).scalar(2.0f));
        CHECK(!reuse.ok() && reuse.error().message().find("race") != std::string::npos,
              "the reuse was not reported: %s", reuse.ok() ? "accepted" : reuse.error().message().c_str());
        if (!reuse.ok()) std::fprintf(stderr, "reported: %s\n", reuse.error().message().c_str());
        release->store(true);
        (void)store.set("test/reused", std::as_bytes(std::span("1", 1)));
        (void)comm_stream.synchronize();
    } else {
        // The send cannot complete (so no host thread can see it complete,
        // which would order the overwrite after it) before the overwrite
        // was enqueued: the receive is posted only then.
        (void)store.get("test/reused", std::chrono::milliseconds(20000));
        comm.recv(comm_stream, b, 0).value();
        CHECK(comm_stream.synchronize().ok(), "recv failed");
    }
    CHECK(comm.error().ok(), "%s", comm.error().ok() ? "" : comm.error().error().message().c_str());
    return failures;
}


// The stream under an operation fails before it (a host function failing on
// rank 0): the operation must not send or reduce whatever its staging held
// (the previous operation's result, 2000: the peer then got 2002 for 1 + 2
// with no error). It fails on both ranks, rank 0's error naming the stream's
// failure, and rank 1's within a fraction of the timeout. `send`: a send
// (1) to rank 1 after the failure instead of an all_reduce, and the failure
// reaches its stream only through an event: the host function fails on
// another stream, which records an event after it that the send's stream
// waits for.
int failed_stream(bool send, bool known = false) {
    Ctx c = context();
    keel::Communicator comm = keel::Communicator::create_from_env(c.device, options(20000)).value();
    const auto value = [&](double v) { return make(KEEL_DTYPE_I32, 256, [&](std::size_t) { return v; }); };
    // 1: a clean operation leaves 2000 in the staging of rank 0's stream.
    keel::Buffer first = upload(c, value(1000));
    if (!send) {
        comm.all_reduce(c.stream, first, KEEL_DTYPE_I32, keel::ReduceOp::sum).value();
    } else if (c.rank == 0) {
        keel::Buffer twice = upload(c, value(2000));
        comm.send(c.stream, twice, 1).value();
    } else {
        comm.recv(c.stream, first, 0).value();
    }
    if (!send || c.rank == 1) CHECK(download(c, first) == value(2000), "the first operation");
    // Rank 0 fails the communicator in step 2 only once rank 1 has the
    // first message: a send completes on the sender before the receiver
    // read it. A barrier moves no data through the staging.
    if (send) {
        comm.barrier(c.stream).value();
        c.stream.synchronize().value();
    }
    // 2: rank 0's stream fails in a host function enqueued before the
    // operation, which is enqueued while the function still runs.
    keel::Buffer second = upload(c, value(c.rank + 1));
    c.stream.synchronize().value();
    auto go = std::make_shared<std::atomic<bool>>(false);
    keel::Stream upstream = keel::Stream::create(c.device).value();
    if (c.rank == 0) {
        const keel::Stream& failing = send ? upstream : c.stream;
        failing
            .enqueue_host_func([go]() -> keel::Result<void> {
                while (!go->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                return keel::Error(KEEL_STATUS_INTERNAL, "[test] the compute before the operation failed");
            })
            .value();
        if (send) {
            const keel::Event produced = keel::Event::create(c.device).value();
            produced.record(upstream).value();
            c.stream.wait(produced).value();
        }
    }
    const auto start = std::chrono::steady_clock::now();
    if (known && c.rank == 0) {
        // The failure is known before the enqueue: the call is refused, and
        // the peer's side must not wait for it until its timeout.
        go->store(true);
        (void)c.stream.synchronize();
        CHECK(!comm.all_reduce(c.stream, second, KEEL_DTYPE_I32, keel::ReduceOp::sum).ok(),
              "an all_reduce on a stream known to have failed was accepted");
    } else if (!send) {
        comm.all_reduce(c.stream, second, KEEL_DTYPE_I32, keel::ReduceOp::sum).value();
    } else if (c.rank == 0) {
        comm.send(c.stream, second, 1).value();
    } else {
        comm.recv(c.stream, second, 0).value();
    }
    go->store(true);
    const keel::Result<void> synced = c.stream.synchronize();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const keel::Result<void> err = comm.error();
    CHECK(!err.ok(), "the communicator reports no error after an operation on a failed stream");
    if (c.stream.host_funcs_can_fail()) CHECK(!synced.ok(), "the stream reports success");
    // Whatever the output holds, never the stale staging's sum or message
    // (read through a stream that did not fail).
    keel::Stream reader = keel::Stream::create(c.device).value();
    const std::vector<std::byte> got =
        reader.copy_to_vector<std::byte>(second.view()).value().get().value();
    CHECK(got != value(send ? 2000 : 2002), "stale data arrived: %s", send ? "2000 (the previous message)" : "2002");
    if (!send) CHECK(got != value(3) || c.rank != 0, "rank 0's all_reduce ran on its failed stream");
    if (!err.ok()) {
        const std::string& m = err.error().message();
        std::fprintf(stderr, "rank %d error: %s\n", c.rank, m.c_str());
        // Rank 0's own error quotes the original error, not only its code.
        if (c.rank == 0 && !known)
            CHECK(m.find("stream had failed") != std::string::npos && m.find("INTERNAL") != std::string::npos &&
                      m.find("[test] the compute before the operation failed") != std::string::npos,
                  "rank 0's error does not name the stream's failure: %s", m.c_str());
        // The peer names the rank that failed the communicator and why, not
        // a closed connection.
        if (c.rank == 1)
            CHECK(m.find("rank 0 failed the communicator: [Communicator::") != std::string::npos &&
                      m.find(send ? "[Communicator::send_recv]" : "[Communicator::all_reduce]") != std::string::npos &&
                      m.find("[test] the compute before the operation failed") != std::string::npos,
                  "rank 1's error does not name rank 0's failure: %s", m.c_str());
    }
    CHECK(s < 8.0, "took %.1f s to fail with a 20 s timeout", s);
    // The communicator is failed: later operations are refused at once.
    CHECK(!comm.all_reduce(reader, first, KEEL_DTYPE_I32, keel::ReduceOp::sum).ok(), "an enqueue after the failure");
    // Rank 0's failure stays posted while its communicator lives: it goes
    // only once rank 1 has read it.
    keel::Store store = keel::Store::from_env().value();
    if (c.rank == 1) (void)store.set("test/failed-stream-read", std::as_bytes(std::span("1", 1)));
    else (void)store.get("test/failed-stream-read", std::chrono::milliseconds(20000));
    return failures;
}

// abort() on one rank while both enqueue sends and receives: every rank
// ends with an error, none by a signal (SIGPIPE: a write to a connection
// the peer shut down). The test runs this many times.
int abort_while_sending() {
    Ctx c = context();
    // The abort may come while the peer still connects: its create fails.
    auto created = keel::Communicator::create_from_env(c.device, options(10000));
    if (!created.ok()) return 0;
    keel::Communicator comm = std::move(created).value();
    const int peer = 1 - c.rank;
    keel::Buffer out = upload(c, std::vector<std::byte>(64 << 10, std::byte{1}));
    keel::Buffer in = upload(c, std::vector<std::byte>(64 << 10));
    std::random_device seed;
    const int delay_us = static_cast<int>(seed() % 3000);
    std::thread aborter;
    if (c.rank == 0)
        aborter = std::thread([&] {
            std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
            comm.abort();
        });
    for (int i = 0; i < 200; ++i) {
        std::vector<keel::P2P> ops = {keel::P2P::send(out, peer), keel::P2P::recv(in, peer)};
        if (!comm.send_recv(c.stream, ops).ok()) break;
    }
    (void)c.stream.synchronize();
    if (aborter.joinable()) aborter.join();
    return failures;
}

// avg where the sum overflows but the mean is representable, integer avg
// exact (toward zero), and max/min with a NaN on one rank: the same NaN
// answer on every rank whichever rank holds it. all_reduce and
// reduce_scatter alike.
int semantics() {
    Ctx c = context();
    keel::Communicator comm = keel::Communicator::create_from_env(c.device, options(20000)).value();
    const int R = c.rank, N = c.size;
    // One value per rank, the same in every element; `want`: the mean.
    auto check_avg = [&](const char* what, keel_dtype d, auto mine, auto want) {
        using T = decltype(mine);
        constexpr std::size_t n = 5;
        std::vector<std::byte> in(n * N * sizeof(T));
        for (std::size_t i = 0; i < n * N; ++i) std::memcpy(in.data() + i * sizeof(T), &mine, sizeof(T));
        keel::Buffer ar = upload(c, std::vector<std::byte>(in.begin(), in.begin() + n * sizeof(T)));
        comm.all_reduce(c.stream, ar.view(0, n * sizeof(T)).value(), d, keel::ReduceOp::avg).value();
        keel::Buffer rs_in = upload(c, in);
        keel::Buffer rs_out = upload(c, std::vector<std::byte>(n * sizeof(T)));
        comm.reduce_scatter(c.stream, rs_in.view(0, in.size()).value(), rs_out.view(0, n * sizeof(T)).value(), d,
                            keel::ReduceOp::avg)
            .value();
        for (keel::Buffer* b : {&ar, &rs_out}) {
            const auto got = download(c, b->view(0, n * sizeof(T)).value());
            for (std::size_t i = 0; i < n; ++i) {
                T v;
                std::memcpy(&v, got.data() + i * sizeof(T), sizeof(T));
                CHECK(v == want, "%s avg (%s): element %zu is %s, want %s", what, b == &ar ? "all_reduce" : "reduce_scatter",
                      i, std::to_string(static_cast<long double>(v)).c_str(),
                      std::to_string(static_cast<long double>(want)).c_str());
            }
        }
    };
    // Even ranks hold `a`, odd ranks `b`.
    auto pick = [&](auto a, auto b) { return R % 2 == 0 ? a : b; };
    const int evens = (N + 1) / 2, odds = N / 2;
    auto mean_int = [&](__int128 a, __int128 b) { return (a * evens + b * odds) / N; };
    check_avg("u8", KEEL_DTYPE_U8, pick(std::uint8_t{200}, std::uint8_t{255}),
              static_cast<std::uint8_t>(mean_int(200, 255)));
    check_avg("i8", KEEL_DTYPE_I8, pick(std::int8_t{-128}, std::int8_t{-127}),
              static_cast<std::int8_t>(mean_int(-128, -127)));
    check_avg("i32", KEEL_DTYPE_I32, pick(std::int32_t{-7}, std::int32_t{2}), static_cast<std::int32_t>(mean_int(-7, 2)));
    constexpr std::int64_t big = std::numeric_limits<std::int64_t>::max();
    check_avg("i64", KEEL_DTYPE_I64, pick(big, big - 2), static_cast<std::int64_t>(mean_int(big, big - 2)));
    constexpr std::uint64_t ubig = std::numeric_limits<std::uint64_t>::max();
    check_avg("u64", KEEL_DTYPE_U64, pick(ubig, ubig - 1), static_cast<std::uint64_t>(mean_int(ubig, ubig - 1)));
    check_avg("f32", KEEL_DTYPE_F32, 3.0e38f, 3.0e38f);
    check_avg("f64", KEEL_DTYPE_F64, 1.0e308, 1.0e308);
    // f16 60000 (0x7b53) and bf16 3e38 (0x7f62): the sums are inf.
    const auto f16 = [](double v) {
        std::byte b[2];
        encode(KEEL_DTYPE_F16, v, b);
        std::uint16_t h;
        std::memcpy(&h, b, 2);
        return h;
    };
    check_avg("f16", KEEL_DTYPE_F16, f16(60000), f16(60000));
    const std::uint16_t bf = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(3.0e38f) >> 16);
    check_avg("bf16", KEEL_DTYPE_BF16, bf, bf);

    // max/min with a NaN on rank `holder` only: NaN on every rank.
    for (keel_dtype d : {KEEL_DTYPE_F32, KEEL_DTYPE_F64, KEEL_DTYPE_F16, KEEL_DTYPE_BF16}) {
        for (int holder = 0; holder < N; ++holder) {
            for (keel::ReduceOp op : {keel::ReduceOp::max, keel::ReduceOp::min}) {
                const std::size_t es = dtype_size(d), n = 7;
                std::vector<std::byte> in = make(d, n, [&](std::size_t i) { return input(R, i, op); });
                if (R == holder) {
                    for (std::size_t i = 0; i < n; ++i) {
                        std::byte* e = in.data() + i * es;
                        if (d == KEEL_DTYPE_F32) { const float x = std::numeric_limits<float>::quiet_NaN(); std::memcpy(e, &x, 4); }
                        else if (d == KEEL_DTYPE_F64) { const double x = std::numeric_limits<double>::quiet_NaN(); std::memcpy(e, &x, 8); }
                        else { const std::uint16_t x = d == KEEL_DTYPE_F16 ? 0x7e00 : 0x7fc0; std::memcpy(e, &x, 2); }
                    }
                }
                keel::Buffer b = upload(c, in);
                comm.all_reduce(c.stream, b.view(0, in.size()).value(), d, op).value();
                const auto got = download(c, b.view(0, in.size()).value());
                for (std::size_t i = 0; i < n; ++i) {
                    double v = 0;
                    if (d == KEEL_DTYPE_F32) { float x; std::memcpy(&x, got.data() + i * 4, 4); v = x; }
                    else if (d == KEEL_DTYPE_F64) std::memcpy(&v, got.data() + i * 8, 8);
                    else {
                        std::uint16_t x;
                        std::memcpy(&x, got.data() + i * 2, 2);
                        v = (x & 0x7fff) > (d == KEEL_DTYPE_F16 ? 0x7c00 : 0x7f80) ? std::nan("") : 0.0;
                    }
                    CHECK(std::isnan(v), "dtype %s %s with a NaN on rank %d: element %zu is %g, not NaN",
                          keel::dtype_name(d), op == keel::ReduceOp::max ? "max" : "min", holder, i, v);
                }
            }
        }
    }
    CHECK(comm.error().ok(), "%s", comm.error().ok() ? "" : comm.error().error().message().c_str());
    return failures;
}

// check_sizes off, a receive larger than its send: the message in its first
// bytes, zeros after it (before: the tail of the staging, the previous
// receive's bytes).
int unchecked_larger_recv() {
    Ctx c = context();
    keel::CommOptions o = options(10000);
    o.check_sizes = false;
    keel::Communicator comm = keel::Communicator::create_from_env(c.device, o).value();
    constexpr std::size_t kLarge = 4096, kSmall = 1024;
    keel::Buffer b = upload(c, std::vector<std::byte>(kLarge, std::byte{7}));
    if (c.rank == 0) {
        comm.send(c.stream, b, 1).value();  // fills rank 1's staging with 7s
        keel::Buffer small = upload(c, std::vector<std::byte>(kSmall, std::byte{1}));
        comm.send(c.stream, small, 1).value();
    } else {
        comm.recv(c.stream, b, 0).value();
        keel::Buffer second = upload(c, std::vector<std::byte>(kLarge, std::byte{9}));
        comm.recv(c.stream, second, 0).value();
        const auto got = download(c, second);
        std::size_t head = 0, tail = 0;
        for (std::size_t i = 0; i < kLarge; ++i) (i < kSmall ? head : tail) += got[i] == (i < kSmall ? std::byte{1} : std::byte{0});
        CHECK(head == kSmall && tail == kLarge - kSmall, "message %zu of %zu bytes, zero tail %zu of %zu (byte %d)",
              head, kSmall, tail, kLarge - kSmall, static_cast<int>(got[kLarge - 1]));
    }
    CHECK(c.stream.synchronize().ok() && comm.error().ok(), "the transfers failed");
    return failures;
}

// Three ranks, rank 2 dies: the survivors' error names it by rank.
int dead_peer_named() {
    Ctx c = context();
    keel::Communicator comm = keel::Communicator::create_from_env(c.device, options(3000)).value();
    keel::Buffer b = upload(c, std::vector<std::byte>(1 << 12));
    comm.all_reduce(c.stream, b, KEEL_DTYPE_F32, keel::ReduceOp::sum).value();
    c.stream.synchronize().value();
    if (c.rank == 2) ::_exit(0);
    comm.all_reduce(c.stream, b, KEEL_DTYPE_F32, keel::ReduceOp::sum).value();
    (void)c.stream.synchronize();
    const keel::Result<void> err = comm.error();
    CHECK(!err.ok(), "the all_reduce with a dead peer succeeded");
    if (!err.ok()) {
        std::fprintf(stderr, "rank %d error: %s\n", c.rank, err.error().message().c_str());
        // The first survivor to see rank 2 go names it; the other may see
        // that survivor's connections end first (it fails the communicator
        // everywhere), and names whichever ranks it saw go.
        CHECK(err.error().message().find("the connection to rank") != std::string::npos,
              "no peer is named by rank: %s", err.error().message().c_str());
    }
    return failures;
}

// An operation whose turn never comes (the communicator's earlier one sits
// on a stream that is blocked): it fails within the timeout, on every
// rank, instead of waiting for that stream.
int turn_never_comes() {
    Ctx c = context();
    keel::Communicator comm = keel::Communicator::create_from_env(c.device, options(1000)).value();
    keel::Stream blocked = keel::Stream::create(c.device).value();
    keel::Buffer a = upload(c, std::vector<std::byte>(256));
    keel::Buffer b = upload(c, std::vector<std::byte>(256));
    c.stream.synchronize().value();
    auto release = std::make_shared<std::atomic<bool>>(false);
    if (c.rank == 0)
        blocked
            .enqueue_host_func([release] {
                const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(15);
                while (!release->load() && std::chrono::steady_clock::now() < end)
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
            })
            .value();
    comm.all_reduce(blocked, a, KEEL_DTYPE_F32, keel::ReduceOp::sum).value();
    const auto start = std::chrono::steady_clock::now();
    comm.all_reduce(c.stream, b, KEEL_DTYPE_F32, keel::ReduceOp::sum).value();
    const keel::Result<void> second = c.stream.synchronize();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    release->store(true);
    (void)blocked.synchronize();
    CHECK(!comm.error().ok(), "no error");
    if (c.rank == 0) {
        CHECK(s < 6.0, "the second all_reduce waited %.1f s for its turn with a 1 s timeout", s);
        if (c.stream.host_funcs_can_fail())
            CHECK(!second.ok() && second.error().message().find("turn") != std::string::npos,
                  "the stream does not say the operation's turn never came: %s",
                  second.ok() ? "ok" : second.error().message().c_str());
    }
    return failures;
}

// A stuck peer under an operation's own timeout: the communicators' is a
// minute, the operations' 800 ms (set_timeout before them). Rank 1 never
// enqueues its side (it waits in the store until rank 0 is done): rank 0's
// all_reduce, and a receive on a second communicator, each fail within a
// few seconds, UNAVAILABLE, naming the operation, the rank, the peer and
// the timeout, never waiting for the minute.
int per_op_timeout() {
    Ctx c = context();
    keel::Store store = keel::Store::from_env().value();
    keel::Communicator reduce_comm = keel::Communicator::create(c.device, store, c.rank, c.size, options(60000)).value();
    keel::Communicator p2p_comm = keel::Communicator::create(c.device, store, c.rank, c.size, options(60000)).value();
    keel::Buffer b = upload(c, std::vector<std::byte>(1 << 12));
    // Both sides connected: create may return on one rank while the other
    // still connects.
    reduce_comm.all_reduce(c.stream, b, KEEL_DTYPE_F32, keel::ReduceOp::sum).value();
    p2p_comm.barrier(c.stream).value();
    c.stream.synchronize().value();
    const std::vector<std::byte> done{std::byte{1}};
    if (c.rank == 1) {
        // Stuck: the peer's operations get nothing from this rank until it is done.
        const auto finished = store.get("per-op-timeout/done", std::chrono::seconds(60));
        CHECK(finished.ok(), "rank 0 never finished: %s", finished.ok() ? "" : finished.error().message().c_str());
        return failures;
    }
    CHECK(reduce_comm.timeout() == std::chrono::milliseconds(60000), "timeout() is not CommOptions::timeout");
    const keel::Result<void> zero = reduce_comm.set_timeout(std::chrono::milliseconds(0));
    CHECK(!zero.ok() && zero.error().code() == KEEL_STATUS_INVALID_ARGUMENT, "a timeout of 0 ms was accepted");
    auto timed = [&](keel::Communicator& comm, const char* op, auto enqueue) {
        const keel::Stream stream = keel::Stream::create(c.device).value();  // fails with the operation
        comm.set_timeout(std::chrono::milliseconds(800)).value();
        CHECK(comm.timeout() == std::chrono::milliseconds(800), "timeout() is not what set_timeout set");
        const auto start = std::chrono::steady_clock::now();
        enqueue(comm, stream).value();
        const keel::Result<void> synced = stream.synchronize();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const keel::Result<void> err = comm.error();
        CHECK(!err.ok(), "%s with a stuck peer succeeded", op);
        CHECK(s < 10.0, "%s took %.1f s with an 800 ms timeout", op, s);
        if (!err.ok()) {
            const std::string& m = err.error().message();
            std::fprintf(stderr, "error: %s\n", m.c_str());
            CHECK(err.error().code() == KEEL_STATUS_UNAVAILABLE, "%s: not UNAVAILABLE: %s", op, m.c_str());
            CHECK(m.find(op) != std::string::npos && m.find(comm.store_prefix()) != std::string::npos &&
                      m.find("rank 0/2") != std::string::npos && m.find("800 ms") != std::string::npos &&
                      (m.find("peer 1") != std::string::npos || m.find("peer ranks of this collective: 1") != std::string::npos),
                  "the message lacks the op, the communicator, the rank, the peer or the timeout: %s", m.c_str());
        }
        if (stream.host_funcs_can_fail()) CHECK(!synced.ok(), "%s: the stream reported success", op);
    };
    timed(reduce_comm, "all_reduce", [&](const keel::Communicator& comm, const keel::Stream& s) {
        return comm.all_reduce(s, b, KEEL_DTYPE_F32, keel::ReduceOp::sum);
    });
    timed(p2p_comm, "recv", [&](const keel::Communicator& comm, const keel::Stream& s) { return comm.recv(s, b, 1); });
    store.set("per-op-timeout/done", done).value();
    return failures;
}

// barrier, reduce, gather, scatter and all_to_all (equal and uneven parts)
// on the generic path: exact results on every rank.
int more_collectives() {
    Ctx c = context();
    keel::Communicator comm = keel::Communicator::create_from_env(c.device, options(20000)).value();
    const int R = c.rank, N = c.size;
    const int root = N - 1;
    auto ints = [](std::size_t n, auto f) {
        std::vector<std::int32_t> v(n);
        for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int32_t>(f(i));
        return v;
    };
    auto up = [&](const std::vector<std::int32_t>& v) {
        const auto* p = reinterpret_cast<const std::byte*>(v.data());
        return upload(c, std::vector<std::byte>(p, p + v.size() * 4));
    };
    auto down = [&](const keel::Buffer& b, std::size_t n) {
        std::vector<std::int32_t> v(n);
        if (n == 0) return v;
        const auto bytes = download(c, b.view(0, n * 4).value());
        std::memcpy(v.data(), bytes.data(), n * 4);
        return v;
    };
    // barrier: rank 0 reaches it 300 ms late; nobody passes it before.
    {
        const auto start = std::chrono::steady_clock::now();
        if (R == 0)
            c.stream.enqueue_host_func([] { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }).value();
        comm.barrier(c.stream).value();
        c.stream.synchronize().value();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        CHECK(s >= 0.25, "passed the barrier %.3f s after start, before rank 0 (300 ms late) reached it", s);
    }
    constexpr std::size_t k = 37;
    // reduce: sum and avg to the last rank; other ranks' outputs untouched.
    {
        keel::Buffer in = up(ints(k, [&](std::size_t i) { return (i + 1) * (R + 1); }));
        keel::Buffer out = up(ints(k, [](std::size_t) { return -1; }));
        comm.reduce(c.stream, in, out, KEEL_DTYPE_I32, keel::ReduceOp::sum, root).value();
        const auto got = down(out, k);
        const auto want = R == root ? ints(k, [&](std::size_t i) { return (i + 1) * N * (N + 1) / 2; })
                                    : ints(k, [](std::size_t) { return -1; });
        CHECK(got == want, "reduce sum: element 1 is %d, want %d", got[1], want[1]);
        keel::Buffer avg_in = up(ints(k, [&](std::size_t i) { return static_cast<int>(i) * N + R; }));
        keel::Buffer avg_out = up(ints(k, [](std::size_t) { return 0; }));
        comm.reduce(c.stream, avg_in, R == root ? avg_out.view() : keel::DeviceView(), KEEL_DTYPE_I32,
                    keel::ReduceOp::avg, root)
            .value();
        if (R == root) {
            const auto avg = down(avg_out, k);
            const auto avg_want = ints(k, [&](std::size_t i) { return static_cast<int>(i) * N + (N - 1) / 2; });
            CHECK(avg == avg_want, "reduce avg: element 1 is %d, want %d", avg[1], avg_want[1]);
        }
    }
    // gather to the last rank, scatter from it.
    {
        keel::Buffer in = up(ints(k, [&](std::size_t i) { return R * 1000 + static_cast<int>(i); }));
        keel::Buffer out = up(ints(k * N, [](std::size_t) { return -1; }));
        comm.gather(c.stream, in, R == root ? out.view() : keel::DeviceView(), root).value();
        if (R == root) {
            const auto got = down(out, k * N);
            CHECK(got == ints(k * N, [&](std::size_t i) { return static_cast<int>(i / k) * 1000 + static_cast<int>(i % k); }),
                  "gather: element %zu is %d", k + 1, got[k + 1]);
        }
        keel::Buffer all = up(ints(k * N, [&](std::size_t i) { return R == root ? static_cast<int>(i) * 3 : -5; }));
        keel::Buffer mine = up(ints(k, [](std::size_t) { return -1; }));
        comm.scatter(c.stream, all, mine, root).value();
        const auto got = down(mine, k);
        CHECK(got == ints(k, [&](std::size_t i) { return static_cast<int>(k * R + i) * 3; }),
              "scatter: element 1 is %d", got[1]);
    }
    // all_to_all, equal parts: part j of rank r holds r*100 + j.
    {
        keel::Buffer in = up(ints(k * N, [&](std::size_t i) { return R * 100 + static_cast<int>(i / k); }));
        keel::Buffer out = up(ints(k * N, [](std::size_t) { return -1; }));
        comm.all_to_all(c.stream, in, out).value();
        const auto got = down(out, k * N);
        CHECK(got == ints(k * N, [&](std::size_t i) { return static_cast<int>(i / k) * 100 + R; }),
              "all_to_all: element %zu is %d", k, got[k]);
    }
    // Uneven: rank r sends r + j + 1 elements to rank j (and one empty part
    // when r + j + 1 == 2, rank 0 to rank 1, is not: every part has data).
    {
        std::vector<std::uint64_t> in_sizes(N), out_sizes(N);
        std::vector<std::int32_t> in_v, want;
        for (int j = 0; j < N; ++j) {
            in_sizes[j] = static_cast<std::uint64_t>(R + j + 1) * 4;
            out_sizes[j] = static_cast<std::uint64_t>(j + R + 1) * 4;
            for (int e = 0; e < R + j + 1; ++e) in_v.push_back(R * 1000 + j * 10 + e);
            for (int e = 0; e < j + R + 1; ++e) want.push_back(j * 1000 + R * 10 + e);
        }
        keel::Buffer in = up(in_v);
        keel::Buffer out = up(std::vector<std::int32_t>(want.size(), -1));
        comm.all_to_all(c.stream, in, in_sizes, out, out_sizes).value();
        const auto got = down(out, want.size());
        std::size_t bad = 0;
        for (std::size_t i = 0; i < want.size(); ++i) bad += got[i] != want[i];
        CHECK(bad == 0, "uneven all_to_all: %zu of %zu elements wrong", bad, want.size());
    }
    CHECK(comm.error().ok(), "%s", comm.error().ok() ? "" : comm.error().error().message().c_str());
    return failures;
}
}  // namespace

// Three ranks, two communicators.
// 1. A peer that leaves once its part is done: rank 0's batch (recv from 2,
//    send to 1: waited in that order) completes its send to 1, then rank 1
//    drops its communicator while rank 0 still waits for rank 2 (held back
//    until then). The batch ran: it must succeed, with its data. The
//    connection watcher's wake of the completed send made Gloo report it as
//    not completed, failing the batch.
// 2. A rank in no operation when another fails: rank 1's stream fails
//    before its receive from rank 0; rank 2 enqueued nothing, yet its
//    error() names rank 1's cause soon after and its next operation is
//    refused (it stayed OK: the communicator failed only where an
//    operation needed rank 1).
int peer_leaves_then_fails() {
    Ctx c = context();
    keel::Store store = keel::Store::from_env().value();
    const auto value = [&](double v) { return make(KEEL_DTYPE_I32, 64, [&](std::size_t) { return v; }); };
    const auto sentinel = value(-7);
    keel::Buffer in = upload(c, value(100 + c.rank));
    keel::Buffer out = upload(c, sentinel);
    c.stream.synchronize().value();
    const auto flag = [&](const std::string& key) { (void)store.set("test/" + key, std::as_bytes(std::span("1", 1))); };
    const auto await = [&](const std::string& key) { (void)store.get("test/" + key, std::chrono::milliseconds(15000)); };
    {
        std::optional<keel::Communicator> comm =
            keel::Communicator::create(c.device, store, c.rank, c.size, options(20000)).value();
        auto go = std::make_shared<std::atomic<bool>>(false);
        if (c.rank == 0) {
            const keel::P2P batch[] = {keel::P2P::recv(out, 2), keel::P2P::send(in, 1)};
            comm->send_recv(c.stream, batch).value();
        } else if (c.rank == 1) {
            comm->recv(c.stream, out, 0).value();
        } else {
            c.stream
                .enqueue_host_func([go]() -> keel::Result<void> {
                    while (!go->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                    return {};
                })
                .value();
            comm->send(c.stream, in, 0).value();
            await("rank-1-left");
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            go->store(true);
        }
        const keel::Result<void> synced = c.stream.synchronize();
        CHECK(synced.ok() && comm->error().ok(), "the operations before rank 1 left failed: %s",
              synced.ok() ? (comm->error().ok() ? "" : comm->error().error().message().c_str())
                          : synced.error().message().c_str());
        if (c.rank != 2) CHECK(download(c, out) == value(c.rank == 0 ? 102 : 100), "the data did not arrive");
        if (c.rank == 1) {
            comm.reset();
            flag("rank-1-left");
        }
    }
    keel::Communicator comm = keel::Communicator::create(c.device, store, c.rank, c.size, options(20000)).value();
    keel::Buffer second = upload(c, sentinel);
    c.stream.synchronize().value();
    // Either may be refused at enqueue: rank 1's stream may have failed
    // already, and rank 0's communicator with it.
    keel::Result<void> enqueued;
    if (c.rank == 0) {
        enqueued = comm.send(c.stream, in, 1);
    } else if (c.rank == 1) {
        c.stream
            .enqueue_host_func([]() -> keel::Result<void> {
                return keel::Error(KEEL_STATUS_INTERNAL, "[test] the compute before the receive failed");
            })
            .value();
        enqueued = comm.recv(c.stream, second, 0);
    }
    const keel::Result<void> synced = c.stream.synchronize();
    if (c.rank != 2) CHECK(!enqueued.ok() || !synced.ok(), "the send to a rank whose stream failed succeeded");
    if (c.rank == 1) {
        keel::Stream reader = keel::Stream::create(c.device).value();
        CHECK(reader.copy_to_vector<std::byte>(second.view()).value().get().value() == sentinel,
              "rank 1's failed receive wrote its output");
    }
    // Every rank, rank 2 in no operation included, learns why.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (comm.error().ok() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const keel::Result<void> err = comm.error();
    CHECK(!err.ok() && err.error().message().find("[test] the compute before the receive failed") != std::string::npos &&
              (c.rank == 1 || err.error().message().find("rank 1 failed the communicator: [Communicator::") !=
                                  std::string::npos),
          "the error does not name rank 1's failure: %s", err.ok() ? "no error" : err.error().message().c_str());
    if (c.rank == 2) CHECK(!comm.send(c.stream, in, 0).ok(), "an operation after the failure was accepted");
    // Rank 1's notice stays posted until the others read it.
    if (c.rank == 1) {
        await("read-0");
        await("read-2");
    } else {
        flag("read-" + std::to_string(c.rank));
    }
    return failures;
}

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    std::string scenario = argv[1];
    if (const std::size_t at = scenario.find('@'); at != std::string::npos) {
        g_device = scenario.substr(at + 1);
        scenario.resize(at);
    }
    // "cuda:{rank}": a device per rank, as NCCL needs.
    if (const std::size_t at = g_device.find("{rank}"); at != std::string::npos)
        g_device.replace(at, 6, std::string(keel::env::foreign("RANK").value_or("0")));
    int rc = 2;
    if (scenario == "collectives") rc = collectives(true);
    else if (scenario == "collectives_small") rc = collectives(false);
    else if (scenario == "p2p") rc = p2p();
    else if (scenario == "killed_peer") rc = killed_peer();
    else if (scenario == "never_arrives") rc = never_arrives();
    else if (scenario == "abort") rc = abort_unblocks();
    else if (scenario == "failed_mid_transfer") rc = failed_mid_transfer();
    else if (scenario == "abort_own_sockets") rc = abort_own_sockets();
    else if (scenario == "bad_input") rc = bad_input();
    else if (scenario == "mismatched_counts") rc = mismatched_counts();
    else if (scenario == "duplicate_rank") rc = duplicate_rank();
    else if (scenario == "checker_hold") rc = checker_hold();
    else if (scenario == "interface") rc = interface_by_name();
    else if (scenario == "two_hosts") rc = two_hosts();
    else if (scenario == "one_all_reduce") rc = one_all_reduce();
    else if (scenario == "dies_while_meeting") rc = dies_while_meeting();
    else if (scenario == "stale_job") rc = stale_job();
    else if (scenario == "killed_after_meeting") rc = killed_after_meeting();
    else if (scenario == "many_communicators") rc = many_communicators();
    else if (scenario == "late_claimant") rc = late_claimant();
    else if (scenario == "unreachable_store") rc = unreachable_store();
    else if (scenario == "create_time") rc = create_time();
    else if (scenario == "checker_reuse") rc = checker_reuse();
    else if (scenario == "failed_stream_all_reduce") rc = failed_stream(false);
    else if (scenario == "failed_stream_send") rc = failed_stream(true);
    else if (scenario == "failed_stream_known") rc = failed_stream(false, true);
    else if (scenario == "abort_while_sending") rc = abort_while_sending();
    else if (scenario == "semantics") rc = semantics();
    else if (scenario == "unchecked_larger_recv") rc = unchecked_larger_recv();
    else if (scenario == "dead_peer_named") rc = dead_peer_named();
    else if (scenario == "turn_never_comes") rc = turn_never_comes();
    else if (scenario == "more_collectives") rc = more_collectives();
    else if (scenario == "per_op_timeout") rc = per_op_timeout();
    else if (scenario == "peer_leaves_then_fails") rc = peer_leaves_then_fails();
    else if (scenario == "exit_while_store_blocks") rc = exit_while_store_blocks();
    else if (scenario == "mismatch_seen_by_all") rc = mismatch_seen_by_all();
    else if (scenario == "peer_left_after_sending") rc = peer_left_after_sending();
    std::fflush(stderr);
    return rc > 3 ? 1 : rc;
}
