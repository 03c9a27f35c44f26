// keel-pipeline: the pipeline of the background paper (Paddle PR 34086):
// S stages (one process each) x M micro-batches per step; each stage sends
// its activation forward and its gradient backward on a communication
// stream, the compute on a compute stream.
//
//   keel-launch -n 2 -- keel-pipeline --device cpu:0 --mode sync
//   keel-launch -n 2 -- keel-pipeline --device cpu:0 --mode hold
//
// --mode sync: after each send the host synchronises the comm stream before
//   dropping the sent buffer (the old way: the buffer must outlive the send).
// --mode hold: the buffer is moved into the send (Communicator::send with
//   Buffer&&), which keeps it until the send ran; the host never waits.
// Both print the step time, the host time spent blocked, the peak device
// memory and a checksum of the gradients stage 0 receives, which must be
// identical between the modes.
//
// The first -w steps (1 by default) are warm-up, outside the step time:
// they allocate the device memory and pinned staging the later steps reuse,
// and hold mode, which has every micro-batch's send in flight at once,
// allocates about twice what sync mode does. On a machine where a first
// touch of a page is expensive (a virtual machine: a page fault costs tens
// of microseconds) that alone made hold's mean over 5 steps slower than
// sync's; the warm-up line prints it. --timeline prints every stage's steps
// (wall time, CPU time, page faults) to stderr.
#include <keel/comm.hpp>
#include <keel/keel.hpp>
#include <keel/tools/cli.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <sys/resource.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
    std::string device = "cpu:0";
    std::string mode;  // required: sync or hold
    int micro_batches = 8;
    int steps = 5;
    int warmup = 1;
    bool timeline = false;
    std::uint64_t elements = 256 * 1024;  // 1 MiB of f32 per activation
};

// What this process has used so far: CPU time (all its threads) and page
// faults served without I/O (first touches of new memory).
struct Usage {
    double cpu_ms = 0;
    double faults = 0;
};

Usage usage_now() {
    timespec t{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    rusage r{};
    ::getrusage(RUSAGE_SELF, &r);
    return {static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6,
            static_cast<double>(r.ru_minflt)};
}

}  // namespace

int main(int argc, char** argv) {
    Args a;
    CLI::App app{"keel-pipeline: pipeline stages (one process each, under keel-launch) exchanging activations\n"
                 "and gradients on a comm stream; --mode sync waits after every send, --mode hold moves the\n"
                 "buffer into the send and never waits. Prints step time, host time blocked, peak memory\n"
                 "and a gradient checksum that must match between the modes.\n"
                 "  keel-launch -n 2 -- keel-pipeline --device cpu:0 --mode hold",
                 "keel-pipeline"};
    keel::cli::show_defaults(app);
    app.add_option("--device", a.device, "Device of every stage");
    app.add_option("--mode", a.mode, "sync: wait after each send; hold: move the buffer into the send")
        ->required()
        ->check(CLI::IsMember({"sync", "hold"}));
    app.add_option("-m,--micro-batches", a.micro_batches, "Micro-batches per step")->check(CLI::Range(1, 4096));
    app.add_option("-s,--steps", a.steps, "Timed steps")->check(CLI::Range(1, 100000));
    app.add_option("-w,--warmup", a.warmup, "Warm-up steps before the timed ones")->check(CLI::Range(0, 100000));
    app.add_option("--elements", a.elements, "f32 elements per activation")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 28));
    app.add_flag("--timeline", a.timeline, "Print every stage's steps (wall, CPU, page faults) to stderr");
    if (const std::optional<int> code = keel::cli::parse(app, argc, argv)) return *code;
    const bool hold = a.mode == "hold";

    auto created = keel::Runtime::create();
    if (!created.ok()) return keel::cli::fail(app, created.error().message());
    keel::Runtime runtime = std::move(created).value();
    auto found = runtime.device(a.device);
    if (!found.ok()) return keel::cli::fail(app, found.error().message());
    keel::Device device = std::move(found).value();
    keel::Stream compute = keel::Stream::create(device).value();
    keel::Stream comm_stream = keel::Stream::create(device).value();
    auto joined = keel::Communicator::create_from_env(device);
    if (!joined.ok()) return keel::cli::fail(app, "joining the stages (run under keel-launch -n STAGES): " +
                                                      joined.error().message());
    keel::Communicator comm = std::move(joined).value();
    const int stage = comm.rank(), stages = comm.size();
    const std::uint64_t bytes = a.elements * 4;
    keel::Kernel fill = keel::Kernel::find(device, "fill").value();
    keel::Kernel axpy = keel::Kernel::find(device, "axpy").value();
    keel::MemoryPool memory = compute.memory().value();

    double blocked_ms = 0;       // every host wait
    double send_blocked_ms = 0;  // of which: waits after sends (sync mode)
    auto blocking = [&](auto&& f) {
        const auto t0 = Clock::now();
        f();
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        blocked_ms += ms;
        return ms;
    };
    // y = alpha * x + y, a new buffer from x on the compute stream: the
    // stage's "layer".
    auto layer = [&](const keel::Buffer& x, float alpha) {
        keel::Buffer y = keel::Buffer::allocate(compute, bytes).value();
        compute.launch(fill, keel::KernelArgs().buffer(y, KEEL_DTYPE_F32).scalar(static_cast<float>(stage + 1)))
            .value();
        compute.launch(axpy, keel::KernelArgs().scalar(alpha).buffer(x, KEEL_DTYPE_F32).buffer(y, KEEL_DTYPE_F32))
            .value();
        return y;
    };
    // Sends `b` to `peer` on the comm stream after the compute stream's work.
    auto send = [&](keel::Buffer b, int peer) {
        comm_stream.order_after(compute).value();
        if (hold) {
            comm.send(comm_stream, std::move(b), peer).value();
        } else {
            comm.send(comm_stream, b, peer).value();
            send_blocked_ms += blocking([&] { comm_stream.synchronize().value(); });
        }
    };
    // A buffer received from `peer`, ready for the compute stream.
    auto recv = [&](int peer) {
        keel::Buffer b = keel::Buffer::allocate(compute, bytes).value();
        comm_stream.order_after(compute).value();  // b's memory is free on compute's timeline
        comm.recv(comm_stream, b, peer).value();
        b.record_stream(comm_stream).value();
        compute.order_after(comm_stream).value();
        return b;
    };

    double checksum = 0;
    double step_ms_total = 0;
    double warmup_ms = 0;
    Usage warmup_used, steps_used;  // totals over the warm-up steps, the timed steps
    memory.reset_peaks();
    for (int step = 0; step < a.warmup + a.steps; ++step) {
        const bool warming = step < a.warmup;
        if (step == a.warmup) blocked_ms = send_blocked_ms = 0;  // the timed steps' only
        const auto t0 = Clock::now();
        const Usage u0 = usage_now();
        std::vector<keel::Buffer> saved;  // the activations kept for backward
        // Forward: all micro-batches (GPipe order).
        for (int mb = 0; mb < a.micro_batches; ++mb) {
            keel::Buffer x;
            if (stage == 0) {
                x = keel::Buffer::allocate(compute, bytes).value();
                compute.launch(fill, keel::KernelArgs().buffer(x, KEEL_DTYPE_F32)
                                         .scalar(static_cast<float>(mb + step + 1) / 8.0f))
                    .value();
            } else {
                x = recv(stage - 1);
            }
            keel::Buffer y = layer(x, 0.5f);
            saved.push_back(std::move(x));
            if (stage + 1 < stages) send(std::move(y), stage + 1);
            else saved.back() = std::move(y);  // the last stage's output seeds its gradient
        }
        // Backward, in reverse.
        std::vector<keel::HostFuture<float>> received;
        for (int mb = a.micro_batches - 1; mb >= 0; --mb) {
            keel::Buffer g = stage + 1 < stages ? recv(stage + 1) : std::move(saved[static_cast<std::size_t>(mb)]);
            keel::Buffer dx = layer(g, 0.25f);
            if (stage > 0) {
                send(std::move(dx), stage - 1);
            } else {
                received.push_back(compute.copy_to_vector<float>(dx).value());
            }
        }
        // The end of the step: the host waits for both streams (both modes).
        std::vector<std::vector<float>> grads;
        blocking([&] {
            for (auto& f : received) grads.push_back(std::move(f).get().value());
            compute.synchronize().value();
            comm_stream.synchronize().value();
        });
        comm.error().expect("the step's communication");
        for (const auto& v : grads)
            for (std::size_t i = 0; i < v.size(); i += 997) checksum += v[i];
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        const Usage u1 = usage_now();
        Usage& used = warming ? warmup_used : steps_used;
        used.cpu_ms += u1.cpu_ms - u0.cpu_ms;
        used.faults += u1.faults - u0.faults;
        (warming ? warmup_ms : step_ms_total) += ms;
        if (a.timeline)
            std::fprintf(stderr, "stage %d step %d%s: %.1f ms, cpu %.1f ms, %.0f page faults\n", stage, step,
                         warming ? " (warm-up)" : "", ms, u1.cpu_ms - u0.cpu_ms, u1.faults - u0.faults);
    }
    const keel::AllocatorStats stats = memory.stats();

    // Stage 0 reports; the others' blocked time and peak memory come to it.
    constexpr int kReported = 8;
    keel::Buffer report = keel::Buffer::allocate(compute, kReported * 8).value();
    const std::vector<double> mine{blocked_ms,          static_cast<double>(stats.peak_in_use_bytes),
                                   step_ms_total,       send_blocked_ms,
                                   warmup_ms,           warmup_used.faults,
                                   steps_used.faults,   steps_used.cpu_ms};
    compute.copy(report, mine).value();
    comm.all_reduce(compute, report, KEEL_DTYPE_F64, keel::ReduceOp::max).value();
    const std::vector<double> worst = compute.copy_to_vector<double>(report).value().get().value();
    if (stage == 0) {
        std::printf("keel-pipeline: %d stages x %d micro-batches of %.1f MiB, %d steps, mode %s, device %s\n", stages,
                    a.micro_batches, static_cast<double>(bytes) / (1 << 20), a.steps, a.mode.c_str(),
                    a.device.c_str());
        std::printf("step time: %.2f ms (mean over %d steps; slowest stage)\n", worst[2] / a.steps, a.steps);
        std::printf("host blocked: %.2f ms (most of any stage, all steps)\n", worst[0]);
        std::printf("host blocked after sends: %.2f ms (most of any stage; the rest is the end of each step)\n",
                    worst[3]);
        std::printf("peak device memory: %.1f MiB (in use, most of any stage)\n", worst[1] / (1 << 20));
        if (a.warmup > 0)
            std::printf("warm-up: %.2f ms per step over %d step(s), %.0f page faults per step (slowest stage, most "
                        "faults of any stage; first touches of the memory later steps reuse)\n",
                        worst[4] / a.warmup, a.warmup, worst[5] / a.warmup);
        std::printf("per timed step: %.0f page faults, %.1f ms CPU (most of any stage; CPU: all threads of its "
                    "process)\n",
                    worst[6] / a.steps, worst[7] / a.steps);
        std::printf("checksum: %.6f\n", checksum);
    }
    return 0;
}
