// keel-trace-bench: host time per operation with tracing off and on, side by
// side in one run (rounds alternate the modes), and the trace's size per
// million operations. cpu:0 by default.
//
//   keel-trace-bench [--device cpu:0] [--ops 20000] [--rounds 5]
#include <keel/keel.hpp>
#include <keel/testing/bench_stats.hpp>
#include <keel/trace.hpp>

#include <keel/tools/cli.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;

template <class T>
T check(keel::Result<T> r, const char* step) {
    if (!r.ok()) {
        std::fprintf(stderr, "keel-trace-bench: %s: %s\n", step, r.error().message().c_str());
        std::exit(1);
    }
    if constexpr (!std::is_void_v<T>) return std::move(r).value();
}

enum class Mode { off, on, on_no_device_times };
constexpr Mode kModes[] = {Mode::off, Mode::on, Mode::on_no_device_times};

struct Op {
    const char* name;
    std::function<void()> run;
};

struct Timing {
    double enqueue_ns = 0;  // the calls alone
    double total_ns = 0;    // with the synchronisations that keep the queue short
};

// `ops` calls of `op`, synchronising every `batch`: the host time of the calls.
Timing measure(const keel::Stream& stream, const Op& op, int ops, int batch) {
    Clock::duration calls{};
    const auto begin = Clock::now();
    for (int done = 0; done < ops; done += batch) {
        const auto t0 = Clock::now();
        for (int i = 0; i < batch; ++i) op.run();
        calls += Clock::now() - t0;
        check(stream.synchronize(), "synchronize");
    }
    const auto total = Clock::now() - begin;
    return {std::chrono::duration<double, std::nano>(calls).count() / ops,
            std::chrono::duration<double, std::nano>(total).count() / ops};
}

using keel::testing::median;

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"keel-trace-bench: host time per operation with tracing off and on (with and without\n"
                 "device times), side by side in one run, and the trace's size per million operations.",
                 "keel-trace-bench"};
    keel::cli::show_defaults(app);
    std::string device_name = "cpu:0";
    int ops = 20000;
    int rounds = 5;
    int batch = 256;
    app.add_option("--device", device_name, "Device to measure");
    app.add_option("--ops", ops, "Operations per measurement")->check(CLI::Range(1000, 100000000));
    app.add_option("--rounds", rounds, "Rounds (each measures every mode; medians are shown)")
        ->check(CLI::Range(1, 1000));
    app.add_option("--batch", batch, "Operations between synchronisations")->check(CLI::Range(1, 100000));
    if (const std::optional<int> code = keel::cli::parse(app, argc, argv)) return *code;
    ops = (ops + batch - 1) / batch * batch;

    keel::Runtime runtime = check(keel::Runtime::create(), "Runtime::create");
    keel::Device device = check(runtime.device(device_name), "device");
    keel::Stream stream = check(keel::Stream::create(device), "Stream::create");
    keel::Stream other = check(keel::Stream::create(device), "Stream::create");
    keel::Buffer small = check(keel::Buffer::allocate(stream, 256), "allocate");
    keel::Buffer dst = check(keel::Buffer::allocate(stream, 256), "allocate");
    keel::Event event = check(keel::Event::create(device), "Event::create");
    std::optional<keel::Kernel> fill;
    if (auto k = keel::Kernel::find(device, "fill"); k.ok()) fill = std::move(*k);
    std::vector<float> host(64, 1.0f);

    std::vector<Op> list = {
        {"memset 256 B", [&] { check(stream.memset(small, 1), "memset"); }},
        {"copy h2d 256 B (staged)", [&] { check(stream.copy(small, host), "copy"); }},
        {"copy d2d 256 B", [&] { check(stream.copy(dst.view(), small.view()), "copy d2d"); }},
        {"record + wait event", [&] {
             check(event.record(stream), "record");
             check(stream.wait(event), "wait");
         }},
        {"alloc + free 4 KiB", [&] { (void)check(keel::Buffer::allocate(stream, 4096), "allocate"); }},
    };
    if (fill) {
        list.push_back({"launch fill 256 B", [&] {
                            check(stream.launch(*fill, keel::KernelArgs().buffer(small, KEEL_DTYPE_F32).scalar(2.0f)),
                                  "launch");
                        }});
    }

    const std::string path = (std::filesystem::temp_directory_path() /
                              ("keel-trace-bench-" + std::to_string(::getpid()) + ".json"))
                                 .string();
    // results[op][mode] -> per-round enqueue ns; bytes and counts of the traces.
    std::vector<std::vector<std::vector<double>>> enqueue(list.size(), std::vector<std::vector<double>>(3));
    std::vector<std::vector<std::vector<double>>> total(list.size(), std::vector<std::vector<double>>(3));
    std::vector<double> bytes_per_op(3, 0.0);
    std::vector<std::uint64_t> traced_ops(3, 0);
    // A build with the hooks compiled out (KEEL_TRACE_HOOKS=OFF) measures
    // "off" only: its figure is the baseline for the hooks' cost.
    bool hooks = true;
    if (auto probe = keel::Trace::start(keel::TraceOptions{path}); probe.ok()) {
        (void)probe->stop();
    } else if (probe.error().code() == KEEL_STATUS_UNIMPLEMENTED) {
        hooks = false;
        std::printf("%s: measuring tracing off only\n", probe.error().message().c_str());
    } else {
        check(std::move(probe), "Trace::start");
    }
    for (int round = -1; round < rounds; ++round) {  // round -1: warm-up
        for (Mode mode : kModes) {
            const int m = static_cast<int>(mode);
            if (!hooks && mode != Mode::off) continue;
            std::optional<keel::Trace> trace;
            if (mode != Mode::off) {
                keel::TraceOptions options{path};
                options.device_times = mode == Mode::on;
                trace = check(keel::Trace::start(options), "Trace::start");
            }
            for (std::size_t i = 0; i < list.size(); ++i) {
                const Timing t = measure(stream, list[i], ops, batch);
                if (round >= 0) {
                    enqueue[i][m].push_back(t.enqueue_ns);
                    total[i][m].push_back(t.total_ns);
                }
            }
            if (trace) {
                const keel::TraceReport report = check(trace->stop(), "Trace::stop");
                if (round >= 0) {
                    bytes_per_op[m] += static_cast<double>(report.bytes);
                    traced_ops[m] += static_cast<std::uint64_t>(ops) * list.size();
                }
            }
        }
    }
    std::filesystem::remove(path);

    std::printf("keel-trace-bench on %s: %d ops per measurement, %d rounds, synchronised every %d; medians\n",
                device.name().c_str(), ops, rounds, batch);
    std::printf("host ns per operation (the calls; in brackets with the synchronisations)\n");
    if (!hooks) {
        std::printf("%-26s %18s\n", "operation", "off (no hooks)");
        for (std::size_t i = 0; i < list.size(); ++i)
            std::printf("%-26s %11.0f (%.0f)\n", list[i].name, median(enqueue[i][0]), median(total[i][0]));
        return 0;
    }
    std::printf("%-26s %18s %18s %12s %22s\n", "operation", "off", "on", "on - off", "on, no device times");
    for (std::size_t i = 0; i < list.size(); ++i) {
        const double off = median(enqueue[i][0]), on = median(enqueue[i][1]), nodt = median(enqueue[i][2]);
        char a[32], b[32], c[32];
        std::snprintf(a, sizeof a, "%.0f (%.0f)", off, median(total[i][0]));
        std::snprintf(b, sizeof b, "%.0f (%.0f)", on, median(total[i][1]));
        std::snprintf(c, sizeof c, "%.0f (%.0f)", nodt, median(total[i][2]));
        std::printf("%-26s %18s %18s %12.0f %22s\n", list[i].name, a, b, on - off, c);
    }
    for (Mode mode : {Mode::on, Mode::on_no_device_times}) {
        const int m = static_cast<int>(mode);
        if (traced_ops[m] == 0) continue;
        std::printf("trace size, %s: %.1f MB per million operations\n",
                    mode == Mode::on ? "with device times" : "without device times",
                    bytes_per_op[m] / static_cast<double>(traced_ops[m]));
    }
    return 0;
}
