// keel-memory-bench: the memory machinery against its baselines, measured in
// the same run, printed as a table with ratios.
//
//   1. cached alloc+free pair vs the plugin's raw device_alloc+device_free
//   2. cached pairs per second with several threads
//   3. copies between pageable containers and the device, both directions,
//      4 KiB to 256 MiB, vs the same copy from/to pinned memory
//   4. the deferred-free scheme: peak memory vs an oracle that frees exactly
//      when the last use completes, and throughput vs synchronising before
//      every cross-stream free
//   5. the cost of checked memory (AllocatorConfig::checked) and of no
//      caching, against the default, on the same loop
//   6. one operation of the hot path (allocation, copy, launch, hold,
//      record_stream, event, fence) with 1, 2 and 4 threads, beside malloc
//      and a mutex-guarded free list (per_op.cpp)
//
// Usage: keel-memory-bench [--device NAME] [--quick] [--sections 123456] [--op NAME]
//                          [--threads 1,2,4] [--reps N] [--streams own|one]
// (--sections: which of the six tables to print, e.g. 5; --op: only that
// row of table 6, e.g. "alloc+free 64K", to profile one loop, or "own enqueue"
// for its own-time lines alone; --threads: the
// thread counts of table 6, ascending, e.g. 1,2,4,8,16 on a many-core host;
// --reps: runs per row of table 6, the best printed, default 3, 1 with --quick;
// --streams: only table 6's columns of a stream per thread, or of one stream).
// Table 3 runs the default StagingConfig; KEEL_BENCH_THREADS, KEEL_BENCH_CHUNK_KIB,
// KEEL_BENCH_AHEAD and KEEL_BENCH_RING override its copy_threads, chunk_bytes,
// stage_ahead and ring_chunks (for tuning on a new machine).
// Timings are wall clock and, for single-threaded loops, the thread's CPU
// time too (less sensitive to a shared, loaded machine).
#include <keel/environment.hpp>
#include <keel/keel.hpp>
#include <keel/testing/bench_stats.hpp>
#include <keel/tools/cli.hpp>

#include "bench_util.hpp"
#include "per_op.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using keel::KiB;
using keel::MiB;
using Clock = std::chrono::steady_clock;
using keel_bench::check;
using keel_bench::thread_cpu_seconds;

using keel::testing::load_average;

struct Timing {
    double wall_s = 0;
    double cpu_s = 0;
};

template <class F>
Timing measure(F&& body) {
    const auto w0 = Clock::now();
    const double c0 = thread_cpu_seconds();
    body();
    return Timing{std::chrono::duration<double>(Clock::now() - w0).count(), thread_cpu_seconds() - c0};
}

std::string size_name(std::uint64_t bytes) { return keel::format_bytes(bytes); }

// ---- 1. cached vs raw allocation --------------------------------------------

void bench_alloc(const keel::Device& device, bool quick) {
    std::printf("\n1. Allocation, one thread: alloc+free pairs (ns per pair; goal: cached <= 100 ns)\n");
    std::printf("   %-10s %12s %12s %14s %14s %16s\n", "size", "cached wall", "cached cpu", "raw wall",
                "raw cpu", "raw/cached wall");
    auto memory = check(keel::MemoryPool::create(device), "MemoryPool::create");
    auto stream = check(keel::Stream::create(memory), "Stream::create");
    const int cached_n = quick ? 50'000 : 500'000;
    const int raw_n = quick ? 2'000 : 20'000;
    for (std::uint64_t size : {4 * KiB, 64 * KiB, 1 * MiB, 4 * MiB}) {
        { auto warm = check(keel::Buffer::allocate(stream, size), "Buffer::allocate"); }
        const Timing cached = measure([&] {
            for (int i = 0; i < cached_n; ++i) {
                auto b = keel::Buffer::allocate(stream, size);
                if (!b.ok()) std::exit(1);
            }
        });
        // The plugin's device_alloc + device_free, through RawBuffer.
        const Timing raw = measure([&] {
            for (int i = 0; i < raw_n; ++i) {
                auto b = keel::RawBuffer::allocate(device, size);
                if (!b.ok() || !b->free().ok()) std::exit(1);
            }
        });
        const double cw = cached.wall_s / cached_n * 1e9, cc = cached.cpu_s / cached_n * 1e9;
        const double rw = raw.wall_s / raw_n * 1e9, rc = raw.cpu_s / raw_n * 1e9;
        std::printf("   %-10s %12.1f %12.1f %14.1f %14.1f %15.1fx\n", size_name(size).c_str(), cw, cc, rw,
                    rc, rw / cw);
    }
    const auto st = memory.stats();
    std::printf("   (%llu allocations, %llu raw allocations by the cache)\n",
                static_cast<unsigned long long>(st.allocations),
                static_cast<unsigned long long>(st.raw_allocations));
}

// ---- 2. threads ---------------------------------------------------------------

void bench_threads(const keel::Device& device, bool quick) {
    std::printf("\n2. Allocation throughput with threads: 64 KiB alloc+free pairs (millions of pairs/s, wall; goal: on\n"
                "   one stream, the aggregate with more threads >= with one). cpu ns = CPU time of all threads per\n"
                "   pair: what contention costs, also where threads outnumber cores and share them.\n");
    std::printf("   %-8s %22s %22s %14s %14s\n", "threads", "one stream per thread", "all on one stream",
                "cpu ns (own)", "cpu ns (one)");
    const int per_thread = quick ? 50'000 : 300'000;
    for (int threads : {1, 2, 4}) {
        double rates[2] = {0, 0};
        double cpu_ns[2] = {0, 0};
        for (int shared = 0; shared < 2; ++shared) {
            auto memory = check(keel::MemoryPool::create(device), "MemoryPool::create");
            std::vector<keel::Stream> streams;
            for (int t = 0; t < (shared ? 1 : threads); ++t)
                streams.push_back(check(keel::Stream::create(memory), "Stream::create"));
            std::atomic<int> ready{0};
            std::atomic<bool> go{false};
            std::vector<double> cpu(static_cast<std::size_t>(threads), 0.0);
            std::vector<std::thread> pool;
            for (int t = 0; t < threads; ++t) {
                pool.emplace_back([&, t] {
                    const keel::Stream& s = streams[shared ? 0 : t];
                    { auto warm = keel::Buffer::allocate(s, 64 * KiB); }
                    ++ready;
                    while (!go.load()) std::this_thread::yield();
                    const double c0 = thread_cpu_seconds();
                    for (int i = 0; i < per_thread; ++i) {
                        auto b = keel::Buffer::allocate(s, 64 * KiB);
                        if (!b.ok()) std::exit(1);
                    }
                    cpu[static_cast<std::size_t>(t)] = thread_cpu_seconds() - c0;
                });
            }
            while (ready.load() != threads) std::this_thread::yield();
            const auto t0 = Clock::now();
            go = true;
            for (auto& th : pool) th.join();
            const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
            rates[shared] = threads * static_cast<double>(per_thread) / secs / 1e6;
            double cpu_total = 0;
            for (double c : cpu) cpu_total += c;
            cpu_ns[shared] = cpu_total / (threads * static_cast<double>(per_thread)) * 1e9;
        }
        std::printf("   %-8d %22.2f %22.2f %14.1f %14.1f\n", threads, rates[0], rates[1], cpu_ns[0], cpu_ns[1]);
    }
}

// ---- 3. copies ------------------------------------------------------------------

// The staging configuration under test: the defaults, or the knobs from the
// environment (for tuning StagingConfig on a new machine).
keel::MemoryConfig copy_config() {
    keel::MemoryConfig config;
    const auto knob = [](keel::env::Var var, auto& field, std::uint64_t unit) {
        const auto n = check(keel::env::integer(var, 1, std::int64_t{1} << 40), "reading the environment");
        if (n) field = static_cast<std::remove_reference_t<decltype(field)>>(static_cast<std::uint64_t>(*n) * unit);
    };
    knob(keel::env::Var::bench_threads, config.staging.copy_threads, 1);
    knob(keel::env::Var::bench_chunk_kib, config.staging.chunk_bytes, KiB);
    knob(keel::env::Var::bench_ahead, config.staging.stage_ahead, 1);
    knob(keel::env::Var::bench_ring, config.staging.ring_chunks, 1);
    return config;
}

std::uint64_t copy_threads_used(const keel::StagingStats& st) { return st.host_copy_threads; }

void bench_copies(const keel::Device& device, bool quick) {
    const int reps = quick ? 3 : 9;
    const keel::MemoryConfig config = copy_config();
    std::printf("\n3. Copies between pageable host memory and the device (GB/s, best of %d; goal: >= 70%% of the\n"
                "   pinned copy for >= 64 MiB on a many-core host). pinned = the same copy from/to a PinnedBuffer;\n"
                "   staged = a pageable vector (h2d: Stream::copy(view, vector), through the runtime's staging\n"
                "   engine; d2h: into the caller's vector, HostCopy::wait, written by the plugin, which stages\n"
                "   it itself if it must); owned = h2d: the vector moved in, d2h: copy_to_vector (a new vector).\n"
                "   ratio = vs pinned: each copy is timed right after a pinned copy of its own, the median of\n"
                "   those pairs. threads = host threads copying into the runtime's staging; allocs = the\n"
                "   runtime's pinned allocations and give-ups = ring give-ups during the timed runs. The plugin's\n"
                "   own staging (moved-in vectors and every d2h, where it must stage: '-' where it copies pageable\n"
                "   memory directly): p-thr = its host copy threads, p-allocs = its pinned allocations and\n"
                "   p-refused = copies that found no staging block, during the timed runs.\n"
                "   staging: %llu KiB chunks, %u staged ahead, ring %u, copy_threads %u (0 = the machine's)\n",
                reps, static_cast<unsigned long long>(config.staging.chunk_bytes / KiB), config.staging.stage_ahead,
                config.staging.ring_chunks, config.staging.copy_threads);
    std::printf("   %-9s %-4s %8s %9s %6s %9s %6s %8s %7s %9s %6s %8s %9s\n", "size", "dir", "pinned", "staged",
                "ratio", "owned", "ratio", "threads", "allocs", "give-ups", "p-thr", "p-allocs", "p-refused");
    auto memory = check(keel::MemoryPool::create(device, config), "MemoryPool::create");
    auto stream = check(keel::Stream::create(memory), "Stream::create");
    for (std::uint64_t size : {4 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB, 256 * MiB}) {
        // Small copies are timed in batches (then synchronised once).
        const int batch = static_cast<int>(std::clamp<std::uint64_t>(16 * MiB / size, 1, 256));
        auto dst = check(keel::RawBuffer::allocate(device, size), "RawBuffer::allocate");
        const keel::DeviceView view = dst;
        auto pinned = check(keel::PinnedBuffer::allocate(device, size), "PinnedBuffer::allocate");
        std::memset(pinned.data(), 7, size);
        std::vector<std::uint8_t> pageable(size, 7);
        const auto timed = [&](auto&& body) {
            const auto t0 = Clock::now();
            for (int i = 0; i < batch; ++i) body();
            check(stream.synchronize(), "synchronize");
            return std::chrono::duration<double>(Clock::now() - t0).count() / batch;
        };
        struct Contender {
            std::vector<double> times, ratios;
        };
        const auto gbs = [&](const std::vector<double>& times) {
            return static_cast<double>(size) / *std::min_element(times.begin(), times.end()) / 1e9;
        };
        const auto median_percent = [](std::vector<double> ratios) {
            std::sort(ratios.begin(), ratios.end());
            return 100.0 * ratios[ratios.size() / 2];
        };
        for (const bool h2d : {true, false}) {
            const auto pinned_copy = [&] {
                if (h2d) check(stream.copy(view, pinned), "copy from pinned");
                else check(stream.copy(pinned, view), "copy to pinned");
            };
            const auto staged_copy = [&] {
                if (h2d) {
                    check(stream.copy(view, pageable), "staged copy");
                } else {
                    auto copy = check(stream.copy(pageable, view), "staged copy");
                    check(copy.wait(), "HostCopy::wait");
                }
            };
            std::vector<std::vector<std::uint8_t>> owned_inputs;
            const auto owned_copy = [&] {
                if (h2d) {
                    check(stream.copy(view, std::move(owned_inputs.back())), "moved-in copy");
                    owned_inputs.pop_back();
                } else {
                    auto future = check(stream.copy_to_vector<std::uint8_t>(view), "copy_to_vector");
                    auto data = check(std::move(future).get(), "HostFuture::get");
                    if (data.size() != size) std::exit(1);
                }
            };
            const auto refill = [&] {  // made (and touched) outside the timing
                owned_inputs.clear();
                if (h2d)
                    for (int i = 0; i < batch; ++i) owned_inputs.emplace_back(pageable);
            };
            // Warm every path with a whole batch (first touch of pages, the
            // staging blocks a batch keeps in flight, threads).
            (void)timed(pinned_copy);
            (void)timed(staged_copy);
            refill();
            (void)timed(owned_copy);
            const auto before = memory.staging_stats();
            const auto plugin_before = device.pageable_staging_stats();
            Contender staged, owned;
            std::vector<double> pinned_times;
            const auto pair = [&](Contender& c, auto&& body) {
                const double base = timed(pinned_copy);
                pinned_times.push_back(base);
                c.times.push_back(timed(body));
                c.ratios.push_back(base / c.times.back());
            };
            for (int r = 0; r < reps; ++r) {
                pair(staged, staged_copy);
                refill();
                pair(owned, owned_copy);
            }
            const auto after = memory.staging_stats();
            const auto plugin_after = device.pageable_staging_stats();
            // '-' where the plugin has no staging of its own to report.
            const bool plugin_stages = plugin_before.ok() && plugin_after.ok();
            const auto plugin_column = [&](int width, auto value) {
                char text[32];
                if (plugin_stages)
                    std::snprintf(text, sizeof text, "%*llu", width, static_cast<unsigned long long>(value()));
                else
                    std::snprintf(text, sizeof text, "%*s", width, "-");
                return std::string(text);
            };
            std::printf("   %-9s %-4s %8.2f %9.2f %5.0f%% %9.2f %5.0f%% %8llu %7llu %9llu %s %s %s\n",
                        size_name(size).c_str(), h2d ? "h2d" : "d2h", gbs(pinned_times), gbs(staged.times),
                        median_percent(staged.ratios), gbs(owned.times), median_percent(owned.ratios),
                        static_cast<unsigned long long>(std::max<std::uint64_t>(copy_threads_used(after), 1)),
                        static_cast<unsigned long long>(after.host_allocations - before.host_allocations),
                        static_cast<unsigned long long>(after.ring_give_ups - before.ring_give_ups),
                        plugin_column(6, [&] { return plugin_after->host_copy_threads; }).c_str(),
                        plugin_column(8, [&] {
                            return plugin_after->pinned_allocations - plugin_before->pinned_allocations;
                        }).c_str(),
                        plugin_column(9, [&] {
                            return plugin_after->refused_copies - plugin_before->refused_copies;
                        }).c_str());
            std::fflush(stdout);
        }
    }
    // copy_to_vector must create its vector, and std::vector zeroes it:
    // first-touch page faults bound that column whatever the copy does
    // (slow in virtual machines).
    std::printf("   a new vector alone (allocated and zeroed, as copy_to_vector must):");
    const char* separator = "";
    for (std::uint64_t size : {64 * MiB, 256 * MiB}) {
        double best = 0;
        for (int r = 0; r < std::min(reps, 3); ++r) {
            const auto t0 = Clock::now();
            std::vector<std::uint8_t> fresh(size);
            const volatile std::uint8_t last = fresh.back();
            (void)last;
            const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
            best = r == 0 ? seconds : std::min(best, seconds);
        }
        std::printf("%s %s %.2f GB/s", separator, size_name(size).c_str(), static_cast<double>(size) / best / 1e9);
        separator = ",";
    }
    std::printf("\n");
}

// ---- 4. deferred frees ---------------------------------------------------------

struct PipelineResult {
    double seconds = 0;
    std::uint64_t peak_in_use = 0;    // allocator: allocated + pending
    std::uint64_t peak_reserved = 0;  // allocator: raw memory held
    std::uint64_t oracle_peak = 0;    // bytes whose last use had not completed
};

enum class FreeMode { deferred, deferred_with_oracle, sync_before_free };

struct Workload {
    std::uint64_t min_bytes = 0;
    std::uint64_t max_bytes = 0;
    int window = 0;  // the host synchronises every `window` steps (0: never)
};

struct Pipeline {
    keel::MemoryPool memory;
    keel::Stream producer;
    keel::Stream consumer;
    keel::Buffer out;
};

// A producer stream fills a buffer; a consumer stream copies it out after a
// fence; the producer frees it at once. The buffer's last use is the
// consumer's copy.
PipelineResult run_steps(Pipeline& p, FreeMode mode, const Workload& w, int steps) {
    keel::MemoryPool& memory = p.memory;
    const keel::Stream& producer = p.producer;
    const keel::Stream& consumer = p.consumer;
    memory.reset_peaks();
    std::mt19937 rng(42);
    std::atomic<std::uint64_t> live{0};
    std::uint64_t oracle_peak = 0;
    const std::uint64_t granules = (w.max_bytes - w.min_bytes) / (4 * KiB) + 1;
    const auto t0 = Clock::now();
    for (int i = 0; i < steps; ++i) {
        const std::uint64_t size = w.min_bytes + (rng() % granules) * 4 * KiB;
        auto buf = check(keel::Buffer::allocate(producer, size), "Buffer::allocate");
        check(producer.memset(buf, static_cast<std::uint8_t>(i)), "memset");
        check(consumer.order_after(producer), "order_after");
        check(consumer.copy(check(p.out.view(0, size), "view"), buf), "copy");
        if (mode == FreeMode::sync_before_free) {
            check(consumer.synchronize(), "synchronize");
            continue;  // buf freed here: its use is done
        }
        check(buf.record_stream(consumer), "record_stream");
        if (mode == FreeMode::deferred_with_oracle) {
            const std::uint64_t bytes = buf.capacity();
            oracle_peak = std::max(oracle_peak, live.fetch_add(bytes) + bytes);
            // The oracle frees exactly when the last use completes.
            check(consumer.enqueue_host_func([&live, bytes] { live.fetch_sub(bytes); }), "host func");
        }
        if (w.window != 0 && (i + 1) % w.window == 0) check(consumer.synchronize(), "synchronize");
    }
    check(consumer.synchronize(), "synchronize");
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    const auto st = memory.stats();
    PipelineResult r;
    r.seconds = seconds;
    r.peak_in_use = st.peak_in_use_bytes - p.out.capacity();
    r.peak_reserved = st.peak_reserved_bytes;
    r.oracle_peak = oracle_peak;
    return r;
}

PipelineResult run_pipeline(const keel::Device& device, FreeMode mode, const Workload& w, int steps) {
    auto memory = check(keel::MemoryPool::create(device), "MemoryPool::create");
    auto producer = check(keel::Stream::create(memory), "Stream::create");
    auto consumer = check(keel::Stream::create(memory), "Stream::create");
    auto out = check(keel::Buffer::allocate(consumer, w.max_bytes), "Buffer::allocate");
    Pipeline p{memory, std::move(producer), std::move(consumer), std::move(out)};
    // A first pass warms the cache (fresh device memory costs page faults
    // on first touch), then the measured pass.
    (void)run_steps(p, mode, w, steps);
    memory.synchronize();
    return run_steps(p, mode, w, steps);
}

void bench_deferred(const keel::Device& device, bool quick) {
    const int steps = quick ? 500 : 4000;
    std::printf("\n4. Deferred cross-stream frees: a two-stream pipeline, %d steps (after a warm-up pass)\n"
                "   in use = bytes not reusable (allocated + pending) vs an oracle that frees exactly when the\n"
                "   last use completes (goal <= 1.05x); reserved = raw memory held; throughput vs synchronising\n"
                "   before every free (goal >= 1.5x).\n",
                steps);
    std::printf("   %-10s %-8s %10s %10s %7s %10s %10s %10s %7s\n", "buffers", "host", "in use",
                "oracle", "ratio", "reserved", "steps/s", "sync/free", "ratio");
    for (auto [lo, hi] : {std::pair{4 * KiB, 64 * KiB}, std::pair{64 * KiB, 512 * KiB}}) {
        const double synced = run_pipeline(device, FreeMode::sync_before_free, {lo, hi, 0}, steps).seconds;
        for (int window : {0, 32}) {
            {
                const Workload w{lo, hi, window};
                const PipelineResult oracle = run_pipeline(device, FreeMode::deferred_with_oracle, w, steps);
                const PipelineResult deferred = run_pipeline(device, FreeMode::deferred, w, steps);
                const std::string range = size_name(lo) + "-" + size_name(hi);
                std::printf("   %-10s %-8s %10s %10s %6.3fx %10s %10.0f %10.0f %6.2fx\n",
                            std::to_string(lo / KiB).append("-").append(std::to_string(hi / KiB)).append("K").c_str(),
                            window == 0 ? "ahead" : "sync/32", size_name(oracle.peak_in_use).c_str(),
                            size_name(oracle.oracle_peak).c_str(),
                            static_cast<double>(oracle.peak_in_use) / static_cast<double>(oracle.oracle_peak),
                            size_name(oracle.peak_reserved).c_str(), steps / deferred.seconds, steps / synced,
                            synced / deferred.seconds);
            }
        }
    }
}

// ---- 5. checked memory -------------------------------------------------------------

void bench_checked(const keel::Device& device, bool quick) {
    std::printf("\n5. Checked memory: steps of allocate 2 x 64 KiB, memset, copy, free both, every 16 steps a\n"
                "   synchronize (us per step, wall and host cpu; the plugin's own checker is not part of this:\n"
                "   see keel_cpu_bench --benchmark_filter=Checker)\n");
    if (check(keel::env::flag(keel::env::Var::check), "reading the environment").value_or(false))
        std::printf("   KEEL_CHECK is set: every instance is checked, the 'default' row too\n");
    std::printf("   %-22s %10s %10s %14s\n", "mode", "wall", "cpu", "wall/default");
    const int steps = quick ? 2'000 : 20'000;
    double base = 0;
    for (int mode = 0; mode < 3; ++mode) {
        keel::MemoryConfig config;
        const char* name = "default";
        if (mode == 1) config.allocator.checked = true, name = "checked";
        if (mode == 2) config.allocator.caching = false, name = "no caching";
        auto memory = check(keel::MemoryPool::create(device, config), "MemoryPool::create");
        auto stream = check(keel::Stream::create(memory), "Stream::create");
        auto run = [&](int n) {
            for (int i = 0; i < n; ++i) {
                auto a = check(keel::Buffer::allocate(stream, 64 * KiB), "Buffer::allocate");
                auto b = check(keel::Buffer::allocate(stream, 64 * KiB), "Buffer::allocate");
                check(stream.memset(a, 1), "memset");
                check(stream.copy(b, a), "copy");
                if (i % 16 == 15) check(stream.synchronize(), "synchronize");
            }
            check(stream.synchronize(), "synchronize");
        };
        run(steps / 10);  // warm up
        const int n = mode == 2 ? steps / 10 : steps;  // every free waits for the device without a cache
        const Timing t = measure([&] { run(n); });
        const double wall = t.wall_s / n * 1e6, cpu = t.cpu_s / n * 1e6;
        if (mode == 0) base = wall;
        std::printf("   %-22s %10.2f %10.2f %13.1fx\n", name, wall, cpu, wall / base);
    }
}

// "1,2,4,8" into ascending thread counts; false for anything else.
bool parse_counts(const char* text, std::vector<int>& out) {
    std::vector<int> counts;
    for (const char* p = text; *p != '\0';) {
        char* end = nullptr;
        const long n = std::strtol(p, &end, 10);
        if (end == p || n < 1 || n > 256 || (!counts.empty() && n <= counts.back())) return false;
        counts.push_back(static_cast<int>(n));
        if (*end == ',') ++end;
        else if (*end != '\0') return false;
        p = end;
    }
    if (counts.empty()) return false;
    out = std::move(counts);
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    std::string name = "cpu:0";
    bool quick = false;
    std::string sections = "123456";
    keel_bench::PerOpOptions per_op;
    std::string threads = "1,2,4";
    std::string streams = "both";
    int reps = 0;
    CLI::App app{"keel-memory-bench: keel's memory machinery against its baselines, measured in one run\n"
                 "(ratios): 1 allocation, 2 threads, 3 copies, 4 deferred frees, 5 checked memory,\n"
                 "6 the cost of one hot-path operation with 1, 2, 4 threads.",
                 "keel-memory-bench"};
    keel::cli::show_defaults(app);
    app.add_option("--device", name, "Device to measure");
    app.add_flag("--quick", quick, "Fewer repetitions (a smoke run)");
    app.add_option("--sections", sections, "Which sections to run, digits of 1..6")
        ->check(CLI::Validator(
            [](std::string& v) -> std::string {
                if (v.empty() || v.find_first_not_of("123456") != std::string::npos)
                    return "'" + v + "' is not a set of section digits 1..6";
                return {};
            },
            "DIGITS 1..6"));
    const std::vector<std::string> op_names = keel_bench::per_op_names();
    app.add_option("--op", per_op.only, "Section 6: only this operation (default: all)")
        ->check(CLI::IsMember(op_names));
    app.add_option("--threads", threads, "Section 6: thread counts, ascending, 1 to 256")
        ->check(CLI::Validator(
            [](std::string& v) -> std::string {
                std::vector<int> counts;
                return parse_counts(v.c_str(), counts) ? std::string() : "'" + v + "' is not an ascending list of 1..256";
            },
            "N[,N...]"));
    app.add_option("--reps", reps, "Section 6: runs per row, the best printed (0: 1 with --quick, else 3)")
        ->check(CLI::Range(0, 1000));
    app.add_option("--streams", streams, "Section 6: columns measured: a stream per thread, one for all, or both")
        ->check(CLI::IsMember({"own", "one", "both"}));
    if (const std::optional<int> code = keel::cli::parse(app, argc, argv)) return *code;
    (void)parse_counts(threads.c_str(), per_op.threads);
    per_op.own_streams = streams != "one";
    per_op.one_stream = streams != "own";
    per_op.quick = quick;
    per_op.reps = reps != 0 ? reps : quick ? 1 : 3;
    const auto wanted = [&](char section) { return sections.find(section) != std::string::npos; };
    auto runtime = check(keel::Runtime::create(), "Runtime::create");
    auto device = check(runtime.device(name), "Runtime::device");
    const double load0 = load_average();
    std::printf("keel-memory-bench on %s (%s), %u hardware threads, load average %.1f at start\n",
                device.name().c_str(), device.properties().name.c_str(), std::thread::hardware_concurrency(),
                load0);
    if (wanted('1')) bench_alloc(device, quick);
    if (wanted('2')) bench_threads(device, quick);
    if (wanted('3')) bench_copies(device, quick);
    if (wanted('4')) bench_deferred(device, quick);
    if (wanted('5')) bench_checked(device, quick);
    if (wanted('6')) keel_bench::bench_per_op(runtime, device, per_op);
    std::printf("\nload average %.1f at the end (a shared machine: expect noise in wall times)\n", load_average());
    return 0;
}
