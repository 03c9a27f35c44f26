// keel-comm-bench: keel::comm collectives against raw Gloo on host buffers,
// measured in the same run, with the columns and flags of nccl-tests.
//
//   keel-launch -n 2 -- keel-comm-bench --device cpu:0 -b 1M -e 16M -f 4 -c 1
//
// keel-comm-bench --help lists the options and their defaults.
// Each size is timed in alternating rounds (keel, raw, keel, raw, ...): the
// time columns are each side's best round; the ratios are the median over
// rounds of keel's round against the raw round right after it. A shared
// machine's load comes and goes in bursts longer than a round, so a pair
// of neighbouring rounds sees the same load, while two best rounds may come
// from different bursts; a short round is one burst's sample, so short
// sizes take more pairs for a median as steady as a long size's. The last
// line is the smallest keel/raw busbw ratio from 1 MiB up. --raw-vs-raw
// puts a second raw Gloo context where keel was: the same work on both
// sides, so its ratios are what this machine alone moves them by.
#include <keel/comm.hpp>
#include <keel/environment.hpp>
#include <keel/keel.hpp>
#include <keel/testing/bench_stats.hpp>
#include <keel/tools/cli.hpp>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/scatter.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// CPU time of the whole process (every thread: the stream's, Gloo's), in us.
double process_cpu_us() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

struct Args {
    std::string device = "cpu:0";
    std::string op = "all_reduce";
    std::string redop = "sum";
    std::uint64_t min_bytes = 32u << 20, max_bytes = 32u << 20;
    double factor = 2;
    int iters = 20, warmup = 5, check = 1;
    int rounds = 0;  // 0: rounds_for()
    int check_sizes = 1;  // CommOptions::check_sizes
    bool raw_vs_raw = false;
};

keel::ReduceOp parse_redop(const std::string& s) {
    if (s == "prod") return keel::ReduceOp::prod;
    if (s == "max") return keel::ReduceOp::max;
    if (s == "min") return keel::ReduceOp::min;
    if (s == "avg") return keel::ReduceOp::avg;
    return keel::ReduceOp::sum;
}

const std::vector<std::string> kOps = {"all_reduce", "broadcast", "all_gather", "reduce_scatter", "send_recv",
                                       "reduce",     "gather",    "scatter",    "all_to_all",     "barrier"};

// The command line into `a`: nullopt to run, or the exit code (0 after
// --help, 1 after a mistake, named).
std::optional<int> parse_args(int argc, char** argv, Args& a) {
    CLI::App app{"keel-comm-bench: keel::comm's collectives against raw Gloo on host buffers, measured in "
                 "alternating rounds of the same run, with the columns and flags of nccl-tests. Run it under "
                 "keel-launch -n N (or a launcher that sets RANK, WORLD_SIZE and KEEL_COMM_STORE).",
                 "keel-comm-bench"};
    keel::cli::show_defaults(app);
    app.add_option("--device", a.device, "the keel device the ranks communicate through");
    app.add_option("--op,-O", a.op, "the operation (roots: rank 0)")->check(CLI::IsMember(kOps));
    app.add_option("-o", a.redop, "the reduction")->check(CLI::IsMember({"sum", "prod", "max", "min", "avg"}));
    app.add_option("-b", a.min_bytes, "the smallest size in bytes (K, M, G: binary)")
        ->transform(CLI::AsSizeValue(false))
        ->check(CLI::Range(std::uint64_t{4}, std::uint64_t{1} << 40));
    app.add_option("-e", a.max_bytes, "the largest size in bytes (K, M, G: binary)")
        ->transform(CLI::AsSizeValue(false))
        ->check(CLI::Range(std::uint64_t{4}, std::uint64_t{1} << 40));
    app.add_option("-f", a.factor, "the factor from one size to the next")->check(CLI::Range(1.01, 1e6));
    app.add_option("-n", a.iters, "operations per round")->check(CLI::Range(1, 1 << 24));
    app.add_option("-w", a.warmup, "warm-up operations per size")->check(CLI::Range(0, 1 << 24));
    app.add_option("-c", a.check, "1: check every result (column #wrong)")->check(CLI::Range(0, 1));
    app.add_option("-r", a.rounds, "alternating rounds per size (0: as many as fill about 4 s, 7 to 63)")
        ->check(CLI::Range(0, 1 << 16));
    app.add_option("--check-sizes", a.check_sizes, "1: keel compares counts across ranks before each collective")
        ->check(CLI::Range(0, 1));
    app.add_flag("--raw-vs-raw", a.raw_vs_raw,
                 "a second raw Gloo context in keel's place: what this machine alone moves the ratios by");
    if (std::optional<int> done = keel::cli::parse(app, argc, argv)) return done;
    if (a.max_bytes < a.min_bytes)
        return keel::cli::fail(app, "-e (" + std::to_string(a.max_bytes) + " bytes) is below -b (" +
                                        std::to_string(a.min_bytes) + " bytes)");
    return std::nullopt;
}

// A failure outside the command line (no device, no launcher): the message,
// exit code 1.
int failed(const keel::Error& error) {
    std::fprintf(stderr, "keel-comm-bench: %s\n", error.message().c_str());
    return 1;
}

// keel's store as Gloo's, for the raw baseline's own context.
class RawStore final : public gloo::rendezvous::Store {
public:
    RawStore(keel::Store s, std::string prefix) : s_(std::move(s)), prefix_(std::move(prefix)) {}
    void set(const std::string& k, const std::vector<char>& v) override {
        s_.set(prefix_ + k, std::as_bytes(std::span(v.data(), v.size()))).value();
    }
    std::vector<char> get(const std::string& k) override {
        auto b = s_.get(prefix_ + k, std::chrono::seconds(60)).value();
        std::vector<char> out(b.size());
        std::memcpy(out.data(), b.data(), b.size());
        return out;
    }
    void wait(const std::vector<std::string>& keys) override {
        for (auto& k : keys) (void)get(k);
    }
    void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) override { wait(keys); }

private:
    keel::Store s_;
    std::string prefix_;
};

// A Gloo context of its own over tcp on loopback, for the raw baseline.
std::shared_ptr<gloo::Context> raw_context(const keel::Store& store, const std::string& prefix, int rank, int n) {
    RawStore raw_store(store, prefix);
    // Where keel listens too: KEEL_COMM_INTERFACE (keel-launch --interface),
    // else loopback.
    gloo::transport::tcp::attr attr;
    const std::optional<std::string_view> iface = keel::env::text(keel::env::Var::comm_interface);
    if (iface && !iface->empty()) attr.iface = std::string(*iface);
    else attr.hostname = "127.0.0.1";
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, n);
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
    context->connectFullMesh(raw_store, device);
    return context;
}

double bus_factor(const std::string& op, int n) {
    if (op == "all_reduce") return 2.0 * (n - 1) / n;
    if (op == "all_gather" || op == "reduce_scatter" || op == "all_to_all" || op == "gather" || op == "scatter")
        return static_cast<double>(n - 1) / n;
    return 1.0;
}

using keel::testing::median;

// Rounds of a size when -r does not say: enough pairs to fill about
// kSecondsPerSize, at least kMinRounds, at most kMaxRounds. Rank 0's first
// pair decides for every rank (they must run the same rounds).
constexpr int kMinRounds = 7, kMaxRounds = 63;
constexpr double kSecondsPerSize = 4.0;

int rounds_for(const std::shared_ptr<gloo::Context>& raw, double first_pair_seconds) {
    int rounds = kMaxRounds;
    if (first_pair_seconds > 0)
        rounds = static_cast<int>(std::clamp(std::ceil(kSecondsPerSize / first_pair_seconds),
                                             static_cast<double>(kMinRounds), static_cast<double>(kMaxRounds)));
    gloo::BroadcastOptions o(raw);
    o.setOutput(&rounds, 1);
    o.setRoot(0);
    gloo::broadcast(o);
    return rounds;
}

float input_value(int rank, std::size_t i) { return static_cast<float>((i * 7 + rank * 3) % 5 + 1); }

}  // namespace

int main(int argc, char** argv) {
    Args a;
    if (std::optional<int> done = parse_args(argc, argv, a)) return *done;


    keel::Result<keel::Runtime> loaded = keel::Runtime::create();
    if (!loaded.ok()) return failed(loaded.error());
    const keel::Runtime& runtime = *loaded;
    keel::Result<keel::Device> found = runtime.device(a.device);
    if (!found.ok()) return failed(found.error());
    const keel::Device device = *found;
    keel::Result<keel::Stream> created = keel::Stream::create(device);
    if (!created.ok()) return failed(created.error());
    const keel::Stream& stream = *created;
    keel::CommOptions comm_options;
    comm_options.check_sizes = a.check_sizes != 0;
    keel::Result<keel::Communicator> joined = keel::Communicator::create_from_env(device, comm_options);
    if (!joined.ok()) return failed(joined.error());
    const keel::Communicator& comm = *joined;
    const int rank = comm.rank(), n = comm.size();
    if (a.op == "send_recv" && n != 2) {
        std::fprintf(stderr, "keel-comm-bench: --op send_recv needs 2 ranks, not %d\n", n);
        return 1;
    }
    const keel::ReduceOp redop = parse_redop(a.redop);

    // The raw baseline: Gloo alone, its own context, host buffers; with
    // --raw-vs-raw a second one in keel's place.
    const keel::Store store = keel::Store::from_env().value();
    const std::shared_ptr<gloo::Context> raw = raw_context(store, "raw/", rank, n);
    const std::shared_ptr<gloo::Context> raw2 = a.raw_vs_raw ? raw_context(store, "raw2/", rank, n) : nullptr;
    auto barrier = [&] {
        gloo::BarrierOptions o(raw);
        gloo::barrier(o);
    };

    if (rank == 0) {
        const std::string rounds = a.rounds > 0 ? std::to_string(a.rounds)
                                                : std::to_string(kMinRounds) + "-" + std::to_string(kMaxRounds) +
                                                      " (about " + std::to_string(static_cast<int>(kSecondsPerSize)) +
                                                      " s per size; column rounds)";
        std::printf("# keel-comm-bench: %s, %d ranks, device %s, redop %s, %d iterations, %d warm-up, %s "
                    "alternating rounds (keel, raw) per size\n",
                    a.op.c_str(), n, a.device.c_str(), a.redop.c_str(), a.iters, a.warmup, rounds.c_str());
        std::printf("# keel checks each collective's counts across ranks first: %s (--check-sizes)\n",
                    a.check_sizes ? "yes" : "no");
        std::printf("# keel's engine: %s\n", comm.engine_description().c_str());
        if (a.raw_vs_raw)
            std::printf("# --raw-vs-raw: the keel columns are a second raw Gloo context, not keel (the same work on both "
                        "sides: the ratios show this machine's noise)\n");
        std::printf("# raw = Gloo alone on host buffers in this run; time columns: best round of each\n");
        std::printf("# ratio = keel busbw / raw busbw, time x = keel time / raw time: the median over rounds of keel's\n"
                    "#   round against the raw round after it (best round against best round: in the summary)\n");
        std::printf("# cpu = this process's CPU time per operation (all its threads), keel and raw, best round\n");
        std::printf("#%11s %12s %6s %6s %10s %10s %10s %7s %10s %10s %7s %9s %9s %7s %6s\n", "size", "count",
                    "type", "redop", "time(us)", "algbw", "busbw", "#wrong", "raw(us)", "raw busbw", "ratio",
                    "cpu(us)", "raw cpu", "time x", "rounds");
    }
    double worst_large = 1e9, worst_large_best = 1e9;
    double worst_small_time = 0, worst_small_best = 0;
    double worst_small_cpu = 0;
    for (std::uint64_t bytes = a.min_bytes; bytes <= a.max_bytes;
         bytes = std::max<std::uint64_t>(bytes + 4, static_cast<std::uint64_t>(bytes * a.factor))) {
        bytes &= ~std::uint64_t{3};
        // Parts of whole floats, one per rank.
        if (a.op == "all_to_all" || a.op == "gather" || a.op == "scatter")
            bytes -= bytes % (4 * static_cast<std::uint64_t>(n));
        const std::size_t count = bytes / 4;
        // Sizes as nccl-tests counts them: all_gather's is the output,
        // reduce_scatter's the input.
        // gather's the output, scatter's the input (nccl-tests' sizes).
        const std::uint64_t in_bytes = a.op == "all_gather" || a.op == "gather" ? bytes / n : bytes;
        const std::uint64_t out_bytes = a.op == "reduce_scatter" || a.op == "scatter" ? bytes / n : bytes;
        const std::size_t in_count = in_bytes / 4, out_count = out_bytes / 4;
        std::vector<float> host_in(in_count);
        for (std::size_t i = 0; i < in_count; ++i) host_in[i] = input_value(rank, i);
        keel::Buffer din = keel::Buffer::allocate(stream, std::max<std::uint64_t>(in_count * 4, 4)).value();
        keel::Buffer dout = keel::Buffer::allocate(stream, std::max<std::uint64_t>(out_count * 4, 4)).value();
        stream.copy(din.view(0, in_count * 4).value(), host_in).value();
        keel::DeviceView vin = din.view(0, in_count * 4).value();
        keel::DeviceView vout = dout.view(0, out_count * 4).value();
        std::vector<float> raw_in = host_in;

        auto keel_op = [&] {
            if (a.op == "all_reduce") return comm.all_reduce(stream, vin, vout, KEEL_DTYPE_F32, redop);
            if (a.op == "broadcast") return comm.broadcast(stream, vin, vout, 0);
            if (a.op == "all_gather") return comm.all_gather(stream, vin, vout);
            if (a.op == "reduce_scatter") return comm.reduce_scatter(stream, vin, vout, KEEL_DTYPE_F32, redop);
            if (a.op == "reduce") return comm.reduce(stream, vin, vout, KEEL_DTYPE_F32, redop, 0);
            if (a.op == "gather") return comm.gather(stream, vin, vout, 0);
            if (a.op == "scatter") return comm.scatter(stream, vin, vout, 0);
            if (a.op == "all_to_all") return comm.all_to_all(stream, vin, vout);
            if (a.op == "barrier") return comm.barrier(stream);
            const keel::P2P ops[] = {keel::P2P::send(vin, 1 - rank), keel::P2P::recv(vout, 1 - rank)};
            return comm.send_recv(stream, ops);
        };
        // One operation of raw Gloo on `raw`'s context and its own output.
        struct RawSide {
            std::shared_ptr<gloo::Context> context;
            std::vector<float> out;
            std::vector<float> received;  // reduce_scatter: every rank's parts
            std::uint64_t slot = 0;       // send_recv
        };
        const auto raw_side = [&](std::shared_ptr<gloo::Context> context) {
            return RawSide{std::move(context), std::vector<float>(out_count),
                           std::vector<float>(a.op == "reduce_scatter" ? in_count : 0)};
        };
        RawSide baseline = raw_side(raw);
        RawSide second = a.raw_vs_raw ? raw_side(raw2) : RawSide{};  // no buffers unless measured
        auto run_raw = [&](RawSide& side) {
            if (a.op == "all_reduce") {
                gloo::AllreduceOptions o(side.context);
                o.setInput(raw_in.data(), in_count);
                o.setOutput(side.out.data(), out_count);
                o.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
                gloo::allreduce(o);
            } else if (a.op == "broadcast") {
                gloo::BroadcastOptions o(side.context);
                if (rank == 0) o.setInput(raw_in.data(), in_count);
                o.setOutput(side.out.data(), out_count);
                o.setRoot(0);
                gloo::broadcast(o);
            } else if (a.op == "all_gather") {
                gloo::AllgatherOptions o(side.context);
                o.setInput(raw_in.data(), in_count);
                o.setOutput(side.out.data(), out_count);
                gloo::allgather(o);
            } else if (a.op == "reduce") {
                gloo::ReduceOptions o(side.context);
                o.setInput(raw_in.data(), in_count);
                o.setOutput(side.out.data(), out_count);
                o.setRoot(0);
                o.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
                gloo::reduce(o);
            } else if (a.op == "gather") {
                gloo::GatherOptions o(side.context);
                o.setInput(raw_in.data(), in_count);
                if (rank == 0) o.setOutput(side.out.data(), out_count);
                o.setRoot(0);
                gloo::gather(o);
            } else if (a.op == "scatter") {
                gloo::ScatterOptions o(side.context);
                std::vector<float*> parts;
                for (int j = 0; j < n; ++j) parts.push_back(raw_in.data() + static_cast<std::size_t>(j) * out_count);
                if (rank == 0) o.setInputs(parts, out_count);
                o.setOutput(side.out.data(), out_count);
                o.setRoot(0);
                gloo::scatter(o);
            } else if (a.op == "all_to_all") {
                gloo::AlltoallOptions o(side.context);
                o.setInput(raw_in.data(), in_count);
                o.setOutput(side.out.data(), out_count);
                gloo::alltoall(o);
            } else if (a.op == "barrier") {
                gloo::BarrierOptions o(side.context);
                gloo::barrier(o);
            } else if (a.op == "reduce_scatter") {
                // The same algorithm as keel's: all-to-all, then reduce.
                gloo::AlltoallOptions o(side.context);
                o.setInput(raw_in.data(), in_count);
                o.setOutput(side.received.data(), in_count);
                gloo::alltoall(o);
                std::memcpy(side.out.data(), side.received.data(), out_count * 4);
                for (int j = 1; j < n; ++j)
                    gloo::sum<float>(side.out.data(), side.out.data(), side.received.data() + j * out_count, out_count);
            } else {
                auto s = side.context->createUnboundBuffer(raw_in.data(), in_bytes);
                auto r = side.context->createUnboundBuffer(side.out.data(), out_bytes);
                s->send(1 - rank, side.slot);
                r->recv(1 - rank, side.slot);
                ++side.slot;
                s->waitSend();
                r->waitRecv();
            }
        };
        const auto raw_op = [&] { run_raw(baseline); };
        // The measured side: keel, or with --raw-vs-raw the second context.
        const auto side_op = [&]() -> keel::Result<void> {
            if (!a.raw_vs_raw) return keel_op();
            run_raw(second);
            return {};
        };
        for (int i = 0; i < a.warmup; ++i) side_op().value();
        stream.synchronize().value();
        for (int i = 0; i < a.warmup; ++i) raw_op();
        double best_keel = 1e30, best_raw = 1e30, cpu_keel = 1e30, cpu_raw = 1e30;
        std::vector<double> time_ratios;  // keel / raw, per pair of rounds
        int rounds = a.rounds > 0 ? a.rounds : 1;
        for (int round = 0; round < rounds; ++round) {
            barrier();
            const auto pair_start = Clock::now();
            auto t0 = pair_start;
            double c0 = process_cpu_us();
            for (int i = 0; i < a.iters; ++i) side_op().value();
            stream.synchronize().value();
            const double keel_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / a.iters;
            cpu_keel = std::min(cpu_keel, (process_cpu_us() - c0) / a.iters);
            barrier();
            t0 = Clock::now();
            c0 = process_cpu_us();
            for (int i = 0; i < a.iters; ++i) raw_op();
            const double raw_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / a.iters;
            cpu_raw = std::min(cpu_raw, (process_cpu_us() - c0) / a.iters);
            best_keel = std::min(best_keel, keel_us);
            best_raw = std::min(best_raw, raw_us);
            time_ratios.push_back(keel_us / raw_us);
            if (round == 0 && a.rounds == 0)
                rounds = rounds_for(raw, std::chrono::duration<double>(Clock::now() - pair_start).count());
        }
        comm.error().expect("the benchmark's operations");
        long wrong = 0;
        if (a.check) {
            const std::vector<float> got =
                a.raw_vs_raw ? second.out : stream.copy_to_vector<float>(vout).value().get().value();
            for (std::size_t i = 0; i < out_count; ++i) {
                float want = 0;
                if (a.op == "all_reduce" && redop == keel::ReduceOp::sum) {
                    for (int r = 0; r < n; ++r) want += input_value(r, i);
                } else if (a.op == "reduce_scatter" && redop == keel::ReduceOp::sum) {
                    for (int r = 0; r < n; ++r) want += input_value(r, i + rank * out_count);
                } else if (a.op == "broadcast") {
                    want = input_value(0, i);
                } else if (a.op == "all_gather") {
                    want = input_value(static_cast<int>(i / in_count), i % in_count);
                } else if (a.op == "send_recv") {
                    want = input_value(1 - rank, i);
                } else if (a.op == "reduce" && redop == keel::ReduceOp::sum && rank == 0) {
                    for (int r = 0; r < n; ++r) want += input_value(r, i);
                } else if (a.op == "gather" && rank == 0) {
                    want = input_value(static_cast<int>(i / in_count), i % in_count);
                } else if (a.op == "scatter") {
                    want = input_value(0, i + rank * out_count);
                } else if (a.op == "all_to_all") {
                    const std::size_t part = in_count / n;
                    want = input_value(static_cast<int>(i / part), rank * part + i % part);
                } else {
                    continue;  // other reductions: not checked
                }
                wrong += got[i] != want;
            }
        }
        const double factor = bus_factor(a.op, n);
        const double algbw = static_cast<double>(bytes) / best_keel / 1e3;  // GB/s
        const double busbw = algbw * factor;
        const double raw_busbw = static_cast<double>(bytes) / best_raw / 1e3 * factor;
        // busbw is bytes over time times one factor for both: the busbw
        // ratio is the inverse time ratio (also with one rank, factor 0).
        const double time_x = median(time_ratios);
        const double ratio = 1 / time_x;
        const double best_time_x = best_keel / best_raw;
        if (bytes >= (1u << 20)) {
            worst_large = std::min(worst_large, ratio);
            worst_large_best = std::min(worst_large_best, 1 / best_time_x);
        }
        if (bytes < (64u << 10)) {
            worst_small_time = std::max(worst_small_time, time_x);
            worst_small_best = std::max(worst_small_best, best_time_x);
            worst_small_cpu = std::max(worst_small_cpu, cpu_keel / cpu_raw);
        }
        if (rank == 0)
            std::printf(" %11llu %12zu %6s %6s %10.1f %10.3f %10.3f %7ld %10.1f %10.3f %6.2fx %9.1f %9.1f %6.2fx %6d\n",
                        static_cast<unsigned long long>(bytes), count, "float", a.redop.c_str(), best_keel, algbw,
                        busbw, wrong, best_raw, raw_busbw, ratio, cpu_keel, cpu_raw, time_x, rounds);
        if (bytes == a.max_bytes) break;
    }
    if (rank == 0) {
        if (worst_small_time > 0)
            std::printf("# below 64 KiB: largest keel/raw time ratio %.2fx (goal <= 1.2x; best round against best "
                        "round %.2fx), CPU time ratio %.2fx\n",
                        worst_small_time, worst_small_best, worst_small_cpu);
        if (worst_large < 1e9) {
            std::printf("# from 1 MiB up: goal >= 0.9x; best round against best round, smallest %.2fx\n",
                        worst_large_best);
            std::printf("# smallest keel/raw busbw ratio from 1 MiB up: %.2fx\n", worst_large);
        }
        else
            std::printf("# keel/raw busbw from 1 MiB up: no size >= 1 MiB measured: n/a\n");
    }
    return 0;
}
