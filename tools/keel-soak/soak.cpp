// keel-soak: a framework's day, compressed. T threads, each with its own
// stream, plus one stream all threads share, do random work for S seconds:
// uploads from containers (staged, moved in, pinned), memset, cross-stream
// hand-offs through events, holds, and pageable and pinned read-backs that
// are verified element by element. A call that fails is counted and its
// stream dropped and recreated, as a framework recovers; a read-back that
// succeeded with wrong data is a mismatch, which must never happen. With
// --churn, side streams come and go while some of their buffers live on
// (read back and checked later on other streams).
//
//   keel-soak --device cpu:0 --seconds 60 --threads 4 [--faults] [--churn]
//
// Prints steps/s, mismatches, failed calls, RSS and reserved device memory
// at each quarter and the memory statistics at the end; exits 1 on a
// mismatch, or with --max-rss-growth / --max-reserved-growth when RSS or
// reserved memory grew from the second quarter to the last.
#include "faults.hpp"
#include "matrix.hpp"
#include "worker.hpp"

#include <keel/base/resident.hpp>
#include <keel/keel.hpp>

#include <keel/tools/cli.hpp>

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// glibc's heap: bytes handed out to the program, and bytes it keeps free
// (arenas and their fragments), to tell growth of live data from memory
// the allocator holds on to.
struct Heap {
    double in_use_mib = 0;
    double free_mib = 0;
};
Heap heap() {
    const struct mallinfo2 m = ::mallinfo2();
    return Heap{static_cast<double>(m.uordblks + m.hblkhd) / (1 << 20), static_cast<double>(m.fordblks) / (1 << 20)};
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"keel-soak: random framework-like work on a device from several threads (copies, kernels,\n"
                 "events, frees), every result verified element by element; optionally with injected faults,\n"
                 "or the fault matrix. Exit 0 when every check held.",
                 "keel-soak"};
    keel::cli::show_defaults(app);
    std::string device_name = "cpu:0";
    double seconds = 10;
    unsigned threads = 4;
    bool faults = false;
    app.add_option("--device", device_name, "device to soak");
    app.add_option("--seconds", seconds, "how long, in seconds (> 0)")->check(CLI::Range(1e-3, 86400.0 * 7));
    app.add_option("--threads", threads, "host threads, one stream each, plus one shared stream")
        ->check(CLI::Range(1u, 256u));
    app.add_flag("--faults", faults, "inject driver/plugin faults where the device can");
    bool matrix = false;
    soak::MatrixOptions matrix_options;
    app.add_flag("--matrix", matrix, "instead: the fault matrix (every injectable fault x step kind x position)");
    app.add_option("--positions", matrix_options.positions, "matrix: positions per fault (0 .. N-1 calls first)")
        ->check(CLI::Range(1u, 1000u));
    double max_rss_growth_mib = 0;
    app.add_option("--max-rss-growth", max_rss_growth_mib,
                   "fail (exit 1) when RSS grows by more than this many MiB from the second quarter to the last "
                   "(memory must be flat once caches and the checker's quarantine are full; 0: not checked)")
        ->check(CLI::NonNegativeNumber);
    double max_reserved_growth_mib = 0;
    app.add_option("--max-reserved-growth", max_reserved_growth_mib,
                   "fail (exit 1) when the device memory reserved by the allocator grows by more than this many MiB "
                   "from the second quarter to the last (0: not checked)")
        ->check(CLI::NonNegativeNumber);
    double max_reserved_mib = 0;
    app.add_option("--max-reserved", max_reserved_mib,
                   "fail (exit 1) when the device memory reserved by the allocator passes this many MiB at a "
                   "quarter (0: not checked)")
        ->check(CLI::NonNegativeNumber);
    bool churn = false;
    app.add_flag("--churn", churn,
                 "a third of the steps open a side stream, fill buffers of sub-segment sizes on it and close it "
                 "while one or two of them live on");
    if (const std::optional<int> code = keel::cli::parse(app, argc, argv)) return *code;
    if (matrix) {
        matrix_options.device = device_name;
        return soak::run_matrix(matrix_options);
    }

    const std::string type = device_name.substr(0, device_name.find(':'));
    if (faults) soak::prepare_faults(type);
    auto created = keel::Runtime::create();
    if (!created.ok()) return keel::cli::fail(app, created.error().message());
    keel::Runtime rt = std::move(created).value();
    auto device = rt.device(device_name);
    if (!device.ok()) return keel::cli::fail(app, device.error().message());
    std::mutex shared_mu;
    std::optional<keel::Stream> shared;
    auto first_stream = keel::Stream::create(*device);
    if (!first_stream.ok()) return keel::cli::fail(app, "creating a stream: " + first_stream.error().message());
    shared.emplace(std::move(first_stream).value());
    keel::MemoryPool memory = shared->memory().expect("the memory instance");
    soak::Counters counters;
    const auto start = Clock::now();
    const auto until = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back([&, t] { soak::Worker(*device, shared, shared_mu, counters, 1000 + t, faults, churn).run(until); });
    std::printf("keel-soak on %s, %u threads, %.0f s%s%s\n", device_name.c_str(), threads, seconds,
                faults ? ", faults injected" : "", churn ? ", stream churn" : "");
    std::printf("| quarter | steps | RSS MiB | heap in use MiB | heap kept free MiB | reserved MiB | allocated MiB |\n"
                "| --- | --- | --- | --- | --- | --- | --- |\n");
    double rss_mib[5] = {};
    double reserved_mib[5] = {};
    for (int q = 1; q <= 4; ++q) {
        std::this_thread::sleep_until(start + (until - start) * q / 4);
        const Heap h = heap();
        rss_mib[q] = static_cast<double>(keel::resident_bytes()) / (1 << 20);
        const keel::AllocatorStats stats = memory.stats();
        reserved_mib[q] = static_cast<double>(stats.reserved_bytes) / (1 << 20);
        std::printf("| %d | %llu | %.1f | %.1f | %.1f | %.1f | %.1f |\n", q,
                    static_cast<unsigned long long>(counters.steps.load()), rss_mib[q], h.in_use_mib, h.free_mib,
                    reserved_mib[q], static_cast<double>(stats.allocated_bytes) / (1 << 20));
        std::fflush(stdout);
    }
    for (std::thread& t : pool) t.join();
    const double took = std::chrono::duration<double>(Clock::now() - start).count();
    if (shared && !shared->synchronize().ok()) counters.failed_calls.fetch_add(1);
    shared.reset();
    memory.synchronize();
    std::printf("steps/s %.0f, mismatches %llu, failed calls %llu, streams replaced %llu, side streams closed %llu\n",
                static_cast<double>(counters.steps.load()) / took,
                static_cast<unsigned long long>(counters.mismatches.load()),
                static_cast<unsigned long long>(counters.failed_calls.load()),
                static_cast<unsigned long long>(counters.streams_replaced.load()),
                static_cast<unsigned long long>(counters.streams_churned.load()));
    std::printf("memory: %s\n", memory.stats().to_string().c_str());
    std::printf("tracker: %s\n", memory.tracker_stats().to_string().c_str());
    std::printf("staging: %s\n", memory.staging_stats().to_string().c_str());
    if (const std::string driver = soak::driver_report(); !driver.empty()) std::printf("driver: %s\n", driver.c_str());
    const double growth = rss_mib[4] - rss_mib[2];
    const bool grew = max_rss_growth_mib > 0 && growth > max_rss_growth_mib;
    if (max_rss_growth_mib > 0)
        std::printf("RSS from quarter 2 to 4: %+.1f MiB (limit %.1f): %s\n", growth, max_rss_growth_mib,
                    grew ? "GREW" : "flat");
    const double reserved_growth = reserved_mib[4] - reserved_mib[2];
    const bool reserved_grew = max_reserved_growth_mib > 0 && reserved_growth > max_reserved_growth_mib;
    if (max_reserved_growth_mib > 0)
        std::printf("reserved from quarter 2 to 4: %+.1f MiB (limit %.1f): %s\n", reserved_growth,
                    max_reserved_growth_mib, reserved_grew ? "GREW" : "flat");
    const double most_reserved = *std::max_element(reserved_mib + 1, reserved_mib + 5);
    const bool too_much = max_reserved_mib > 0 && most_reserved > max_reserved_mib;
    if (max_reserved_mib > 0)
        std::printf("reserved at most %.1f MiB at a quarter (limit %.1f): %s\n", most_reserved, max_reserved_mib,
                    too_much ? "TOO MUCH" : "within");
    return counters.mismatches.load() == 0 && !grew && !reserved_grew && !too_much ? 0 : 1;
}
