#include "per_op.hpp"

#include "bench_util.hpp"
#include "own_enqueue.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace keel_bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint64_t kPairBytes = 64 * keel::KiB;  // as table 2
constexpr std::uint64_t kSmallBytes = 256;           // copies and kernels: the enqueue, not the bytes

// Keeps the compiler from dropping an allocation it can see is unused.
void escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }

// The PyTorch-style reference: one free list per device behind one mutex.
class LockedFreeList {
public:
    LockedFreeList() = default;
    LockedFreeList(const LockedFreeList&) = delete;
    LockedFreeList& operator=(const LockedFreeList&) = delete;
    LockedFreeList(LockedFreeList&&) = delete;
    LockedFreeList& operator=(LockedFreeList&&) = delete;
    ~LockedFreeList() {
        for (void* p : free_) std::free(p);
    }
    void* take() {
        {
            std::lock_guard lock(mu_);
            if (!free_.empty()) {
                void* p = free_.back();
                free_.pop_back();
                return p;
            }
        }
        return std::malloc(kPairBytes);
    }
    void give(void* p) {
        std::lock_guard lock(mu_);
        free_.push_back(p);
    }

private:
    std::mutex mu_;
    std::vector<void*> free_;
};

// What one thread's operations work on.
struct Lane {
    const keel::Stream* stream = nullptr;  // its own, or the one all share
    const keel::Stream* other = nullptr;   // another stream, for record_stream
    keel::Buffer src;                      // kSmallBytes on `stream`
    keel::Buffer dst;
    const keel::Kernel* fill = nullptr;
    keel::KernelArgs fill_args;
    LockedFreeList* list = nullptr;
};

struct Op {
    const char* name;
    bool keel;       // false: a baseline, which has no stream
    int sync_every;  // enqueues: the stream is synchronized every this many (0: never)
    void (*run)(Lane&);
};

const Op kOps[] = {
    {"malloc+free 64K", false, 0,
     [](Lane&) {
         void* p = std::malloc(kPairBytes);
         escape(p);
         std::free(p);
     }},
    {"mutex list 64K", false, 0,
     [](Lane& l) {
         void* p = l.list->take();
         escape(p);
         l.list->give(p);
     }},
    {"alloc+free 64K", true, 0,
     [](Lane& l) { (void)check(keel::Buffer::allocate(*l.stream, kPairBytes), "Buffer::allocate"); }},
    {"copy d2d 256B", true, 256, [](Lane& l) { check(l.stream->copy(l.dst, l.src), "Stream::copy"); }},
    {"launch fill", true, 256, [](Lane& l) { check(l.stream->launch(*l.fill, l.fill_args), "Stream::launch"); }},
    {"hold", true, 256, [](Lane& l) { check(l.stream->hold(std::vector<int>()), "Stream::hold"); }},
    {"record_stream", true, 0, [](Lane& l) { check(l.src.record_stream(*l.other), "Buffer::record_stream"); }},
    {"event create", true, 0,
     [](Lane& l) { (void)check(keel::Event::create(l.stream->device()), "Event::create"); }},
    {"fence", true, 256, [](Lane& l) { (void)check(l.stream->fence(), "Stream::fence"); }},
};

}  // namespace

std::vector<std::string> per_op_names() {
    std::vector<std::string> out;
    for (const Op& op : kOps) out.emplace_back(op.name);
    out.emplace_back("own enqueue");
    return out;
}

namespace {

struct PerOp {
    double wall_ns = 0;  // elapsed time / operations of all threads
    double cpu_ns = 0;   // CPU time of all threads / their operations
    double parallel = 0; // CPU time of all threads / elapsed time: threads that really ran at once
};

PerOp run_once(const keel::Device& device, const Op& op, int threads, bool one_stream, int per_thread) {

    auto memory = check(keel::MemoryPool::create(device), "MemoryPool::create");
    const auto kernel = check(keel::Kernel::find(device, "fill"), "Kernel::find fill");
    const int stream_count = one_stream ? 1 : threads;
    std::vector<keel::Stream> streams;
    std::vector<keel::Stream> others;
    for (int i = 0; i < stream_count; ++i) {
        streams.push_back(check(keel::Stream::create(memory), "Stream::create"));
        others.push_back(check(keel::Stream::create(memory), "Stream::create"));
    }
    LockedFreeList list;
    std::vector<Lane> lanes(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) {
        Lane& l = lanes[static_cast<std::size_t>(t)];
        l.stream = &streams[static_cast<std::size_t>(one_stream ? 0 : t)];
        l.other = &others[static_cast<std::size_t>(one_stream ? 0 : t)];
        l.src = check(keel::Buffer::allocate(*l.stream, kSmallBytes), "Buffer::allocate");
        l.dst = check(keel::Buffer::allocate(*l.stream, kSmallBytes), "Buffer::allocate");
        l.fill = &kernel;
        l.fill_args = keel::KernelArgs().buffer(l.dst, KEEL_DTYPE_F32).scalar(1.0f);
        l.list = &list;
    }
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> cpu(static_cast<std::size_t>(threads), 0.0);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            Lane& l = lanes[static_cast<std::size_t>(t)];
            // Warm: pools, events, caches, and the first row as warm as the later ones.
            for (int i = 0; i < std::max(per_thread / 20, 64); ++i) op.run(l);
            if (op.sync_every != 0) check(l.stream->synchronize(), "Stream::synchronize");
            ++ready;
            while (!go.load()) std::this_thread::yield();
            const double c0 = thread_cpu_seconds();
            for (int i = 1; i <= per_thread; ++i) {
                op.run(l);
                if (op.sync_every != 0 && i % op.sync_every == 0) check(l.stream->synchronize(), "Stream::synchronize");
            }
            if (op.sync_every != 0) check(l.stream->synchronize(), "Stream::synchronize");
            cpu[static_cast<std::size_t>(t)] = thread_cpu_seconds() - c0;
        });
    }
    while (ready.load() != threads) std::this_thread::yield();
    const auto t0 = Clock::now();
    go = true;
    for (auto& th : pool) th.join();
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    double cpu_total = 0;
    for (double c : cpu) cpu_total += c;
    const double ops = threads * static_cast<double>(per_thread);
    return PerOp{secs / ops * 1e9, cpu_total / ops * 1e9, cpu_total / secs};
}

// The best of `reps` runs: the least CPU and the least elapsed time per
// operation, each on its own (a loaded machine only ever adds to either).
PerOp run(const keel::Device& device, const Op& op, int threads, bool one_stream, int per_thread, int reps) {
    PerOp best = run_once(device, op, threads, one_stream, per_thread);
    for (int r = 1; r < reps; ++r) {
        const PerOp next = run_once(device, op, threads, one_stream, per_thread);
        best.cpu_ns = std::min(best.cpu_ns, next.cpu_ns);
        if (next.wall_ns < best.wall_ns) best.wall_ns = next.wall_ns, best.parallel = next.parallel;
    }
    return best;
}

}  // namespace

void bench_per_op(const keel::Runtime& runtime, const keel::Device& device, const PerOpOptions& options) {
    std::printf(
        "\n6. One operation with threads (ns per operation). wall = elapsed time / all threads' operations;\n"
        "   cpu = all threads' CPU time / their operations (contention shows here, also when threads\n"
        "   outnumber cores); x1 = cpu vs the same operation on 1 thread; par = CPU time / elapsed time (how\n"
        "   many threads really ran at once: near 1 on a loaded machine, where x1 cannot show contention);\n"
        "   speed-up = 1 thread's wall / N threads' wall (aggregate throughput vs 1 thread). \"own\": a stream\n"
        "   per thread, \"one\": all threads on one stream. Best of %d runs each. malloc+free and the mutex\n"
        "   list are the controls: their x1 is what the machine itself adds with N threads (SMT siblings,\n"
        "   shared caches, clock). Enqueues (copy, launch, hold, fence) synchronize every 256 operations: their\n"
        "   cpu holds the synchronize calls too (spinning while the stream's worker runs the operations).\n",
        options.reps);
    std::printf("   %-16s %7s %9s %9s %6s %5s %8s %9s %9s %6s %5s\n", "operation", "threads", "own wall", "own cpu",
                "x1", "par", "speed-up", "one wall", "one cpu", "x1", "par");
    const int per_thread = options.quick ? 20'000 : 200'000;
    // Figures the goals are read from: the 2-thread rows.
    double alloc_own_x1 = 0, alloc_one_x1 = 0, alloc_speedup = 0, alloc_par = 0, malloc_x1 = 0, list_x1 = 0;
    for (const Op& op : kOps) {
        if (!options.only.empty() && options.only != op.name) continue;
        PerOp first[2];
        for (int threads : options.threads) {
            PerOp r[2];
            const bool measured[2] = {options.own_streams, op.keel && options.one_stream};
            for (int one = 0; one < 2; ++one)
                if (measured[one]) r[one] = run(device, op, threads, one != 0, per_thread, options.reps);
            if (threads == options.threads.front()) first[0] = r[0], first[1] = r[1];
            const double x1 = r[0].cpu_ns / first[0].cpu_ns;
            const double speedup = first[0].wall_ns / r[0].wall_ns;
            std::printf("   %-16s %7d", op.name, threads);
            if (measured[0])
                std::printf(" %9.1f %9.1f %5.2fx %5.2f %7.2fx", r[0].wall_ns, r[0].cpu_ns, x1, r[0].parallel, speedup);
            else
                std::printf(" %9s %9s %6s %5s %8s", "-", "-", "-", "-", "-");
            if (measured[1])
                std::printf(" %9.1f %9.1f %5.2fx %5.2f\n", r[1].wall_ns, r[1].cpu_ns, r[1].cpu_ns / first[1].cpu_ns,
                            r[1].parallel);
            else
                std::printf(" %9s %9s %6s %5s\n", "-", "-", "-", "-");
            if (threads != 2 || options.threads.front() != 1 || !options.own_streams || !options.one_stream) continue;
            const std::string name = op.name;
            if (name == "malloc+free 64K") malloc_x1 = x1;
            if (name == "mutex list 64K") list_x1 = x1;
            if (name == "alloc+free 64K") {
                alloc_own_x1 = x1, alloc_speedup = speedup, alloc_par = r[0].parallel;
                alloc_one_x1 = r[1].cpu_ns / first[1].cpu_ns;
            }
        }
    }
    const auto verdict = [](bool met) { return met ? "met" : "MISSED"; };
    if (options.only.empty() || options.only == "own enqueue") print_own_enqueue(runtime, device, options.quick);
    if (alloc_own_x1 == 0) return;  // no 1- and 2-thread alloc+free rows
    std::printf("   goals, 2 threads vs 1, 64 KiB alloc+free: cpu x1 own %.2f (<= 1.2: %s), one %.2f (<= 1.3: %s);\n"
                "   own speed-up %.2fx at par %.2f (>= 1.8 on a quiet machine: %s);\n"
                "   the controls' cpu x1: malloc+free %.2f, mutex list %.2f.\n",
                alloc_own_x1, verdict(alloc_own_x1 <= 1.2), alloc_one_x1, verdict(alloc_one_x1 <= 1.3), alloc_speedup,
                alloc_par, alloc_par < 1.8 ? "not measured, par < 1.8: the threads did not run at once" : verdict(alloc_speedup >= 1.8),
                malloc_x1, list_x1);
}

}  // namespace keel_bench
