#include "own_enqueue.hpp"

#include "bench_util.hpp"
#include "raw_plugin.hpp"
#include "worker_gate.hpp"

#include <keel/testing/bench_stats.hpp>

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace keel_bench {
namespace {

// Enqueues timed per gate: far below the CPU plugin's queue depth
// (Stream::kMaxDepth, 65,536), past which an enqueue waits for the worker.
constexpr int kBatch = 256;

// Keeps the calling thread on the CPU it is on, and so the stream workers
// it creates meanwhile (a new thread inherits its creator's affinity); the
// thread's affinity comes back when this goes. With the workers on the
// measuring thread's CPU, the queue nodes they last touched are in that
// CPU's caches, whichever CPU the scheduler would have given them: without
// it, a run measured each enqueue at 35 or 80-110 ns depending on where the
// worker happened to run.
class PinnedHere {
public:
    PinnedHere() {
        pinned_ = ::sched_getaffinity(0, sizeof before_, &before_) == 0;
        const int cpu = ::sched_getcpu();
        cpu_set_t here;
        CPU_ZERO(&here);
        if (pinned_ && cpu >= 0) {
            CPU_SET(cpu, &here);
            pinned_ = ::sched_setaffinity(0, sizeof here, &here) == 0;
        }
    }
    PinnedHere(const PinnedHere&) = delete;
    PinnedHere& operator=(const PinnedHere&) = delete;
    PinnedHere(PinnedHere&&) = delete;
    PinnedHere& operator=(PinnedHere&&) = delete;
    ~PinnedHere() {
        if (pinned_) (void)::sched_setaffinity(0, sizeof before_, &before_);
    }

private:
    cpu_set_t before_{};
    bool pinned_ = false;
};

// One way to enqueue (keel or the plugin alone; a copy or a launch).
// `hold(gate)` enqueues the gate; `enqueue()` makes one enqueue (false, and
// `error` set, if it failed); `synchronize()` waits for the stream.
template <class Hold, class Enqueue, class Synchronize>
struct Path {
    const char* name;
    Hold hold;
    Enqueue enqueue;
    Synchronize synchronize;
};

// Runs one batch of kBatch enqueues while the stream's worker waits in a
// gate, which is opened and the stream synchronized after the batch's clock
// stopped; the batch's CPU seconds.
template <class P>
double gated_batch(const P& path, std::string& error) {
    WorkerGate gate;
    path.hold(gate);
    gate.wait_held();
    bool ok = true;
    const double c0 = thread_cpu_seconds();
    for (int i = 0; i < kBatch && ok; ++i) ok = path.enqueue();
    const double cpu = thread_cpu_seconds() - c0;
    gate.open();
    path.synchronize();
    if (!ok) stop(path.name, error);
    return cpu;
}

double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

using keel::testing::median;

}  // namespace

void print_own_enqueue(const keel::Runtime& runtime, const keel::Device& device, bool quick) {
    const PinnedHere pinned;
    RawStream raw(runtime, device);
    if (!raw.why_not().empty()) {
        std::printf("   keel's own enqueue time: not measured (the plugin alone: %s)\n", raw.why_not().c_str());
        return;
    }
    const auto stream = check(keel::Stream::create(device), "Stream::create");
    const auto src = check(keel::Buffer::allocate(stream, RawStream::kBytes), "Buffer::allocate");
    const auto dst = check(keel::Buffer::allocate(stream, RawStream::kBytes), "Buffer::allocate");
    const auto fill = check(keel::Kernel::find(device, "fill"), "Kernel::find fill");
    const auto fill_args = keel::KernelArgs().buffer(dst, KEEL_DTYPE_F32).scalar(1.0f);

    std::string error;
    const auto keel_hold = [&](WorkerGate& gate) {
        check(stream.enqueue_host_func([&gate] { gate.hold(); }), "Stream::enqueue_host_func");
    };
    const auto keel_sync = [&] { check(stream.synchronize(), "Stream::synchronize"); };
    const auto keel_ok = [&](keel::Result<void> r) {
        if (r.ok()) [[likely]] return true;
        error = r.error().message();
        return false;
    };
    const auto raw_hold = [&](WorkerGate& gate) {
        if (std::string why = raw.hold(gate); !why.empty()) stop("plugin alone: stream_enqueue_host_func", why);
    };
    const auto raw_sync = [&] {
        if (std::string why = raw.synchronize(); !why.empty()) stop("plugin alone: stream_synchronize", why);
    };
    const auto raw_ok = [&](keel_error* e) {
        if (e == nullptr) [[likely]] return true;
        error = error_text(e);
        return false;
    };
    const Path keel_copy{"keel copy", keel_hold, [&] { return keel_ok(stream.copy(dst, src)); }, keel_sync};
    const Path raw_copy{"plugin alone copy", raw_hold, [&] { return raw_ok(raw.copy()); }, raw_sync};
    const Path keel_launch{"keel launch", keel_hold, [&] { return keel_ok(stream.launch(fill, fill_args)); },
                           keel_sync};
    const Path raw_launch{"plugin alone launch", raw_hold, [&] { return raw_ok(raw.launch()); }, raw_sync};

    // The four alternate batch by batch, so that all see the same machine;
    // the first run warms (nodes, caches) and is not kept.
    const int runs = quick ? 3 : 11;
    const int batches = quick ? 16 : 64;
    std::vector<double> ns[4];        // per run
    std::vector<double> batch_own[2];  // per pair of neighbouring batches: keel's less the plugin's
    const double ns_per = 1e9 / kBatch;
    for (int run = 0; run <= runs; ++run) {
        double cpu[4] = {};
        for (int b = 0; b < batches; ++b) {
            double batch[4];
            batch[0] = gated_batch(keel_copy, error);
            batch[1] = gated_batch(raw_copy, error);
            batch[2] = gated_batch(keel_launch, error);
            batch[3] = gated_batch(raw_launch, error);
            for (int p = 0; p < 4; ++p) cpu[p] += batch[p];
            if (run == 0) continue;
            batch_own[0].push_back((batch[0] - batch[1]) * ns_per);
            batch_own[1].push_back((batch[2] - batch[3]) * ns_per);
        }
        if (run == 0) continue;
        for (int p = 0; p < 4; ++p) ns[p].push_back(cpu[p] / batches * ns_per);
    }
    std::printf("   keel's own enqueue time, 1 thread: CPU ns per enqueue, timed %d at a time while the stream's\n"
                "   worker waits in a host function (it takes none of them meanwhile; worker and caller on one CPU),\n"
                "   through keel and through the plugin alone (a second instance of it, through the C ABI), batches\n"
                "   alternating; min / median of %d runs of %d batches; own = keel - plugin alone, the median over\n"
                "   the batches of the difference between neighbouring ones:\n",
                kBatch, runs, batches);
    const auto row = [](const char* what, const std::vector<double>& k, const std::vector<double>& p,
                        const std::vector<double>& own) {
        std::printf("   %-7s keel %6.1f / %6.1f   plugin alone %6.1f / %6.1f   own %6.1f\n", what, min_of(k),
                    median(k), min_of(p), median(p), median(own));
        return median(own);
    };
    const double copy_own = row("copy", ns[0], ns[1], batch_own[0]);
    const double launch_own = row("launch", ns[2], ns[3], batch_own[1]);
    std::printf("   own <= 100 ns: %s\n", copy_own <= 100 && launch_own <= 100 ? "met" : "MISSED");
}

}  // namespace keel_bench
