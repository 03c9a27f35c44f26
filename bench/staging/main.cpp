// keel-staging-bench: keel::staging's PageableStaging (the execution-time
// staging that plugins without access to pageable memory use for memcpy_h2d
// and memcpy_d2h) on a simulated link, so that its overlap and its chunk and
// block defaults can be checked and tuned without a GPU.
//
// The simulated stream runs its operations in order on one thread, as a
// device stream does: a host step calls the Step, and a device copy stands
// for a DMA over a link of R GB/s: it sleeps until its start + bytes / R and
// uses no CPU, so the host's copy threads have the cores to themselves, as
// beside a copy engine. Pinned memory is page-aligned heap memory.
//
// For each size x direction x link rate x blocks_per_copy it prints the best
// of N staged copies and, measured in the same run:
//   host    the CopyPool alone copying the same bytes chunk by chunk between
//           the pageable vector and one reused pinned block (same threads)
//   serial  1 / (1/host + 1/link): what a pipeline with no overlap reaches
//   link alone  the simulated stream running the device copies alone (how
//           close its sleeps come to the nominal rate)
// A pipeline that overlaps reaches about min(host, link) with 2+ blocks;
// with 1 block it reaches the serial bound at best.
//
// Usage: keel-staging-bench [--quick] [--link GBPS] [--chunk-kib N]
//                           [--threads N] [--reps N] [--check]
// The configuration starts from keel::staging::with_environment()
// (KEEL_PAGEABLE_CHUNK_KIB, KEEL_PAGEABLE_STAGING_MIB, KEEL_PAGEABLE_THREADS;
// blocks_per_copy is swept over 1-4, so KEEL_PAGEABLE_BLOCKS is not used)
// and the flags override it. --check makes one untimed copy per row whose
// device copies also move the bytes, and verifies them.
#include <keel/staging/config.hpp>
#include <keel/staging/copy_pool.hpp>
#include <keel/staging/pageable_staging.hpp>
#include <keel/staging/pinned_blocks.hpp>
#include <keel/testing/bench_stats.hpp>
#include <keel/tools/cli.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

namespace {

using keel::Error;
using keel::Result;
using keel::staging::CopyPool;
using keel::staging::PageableStaging;
using keel::StagingConfig;
using keel::staging::CopyPoolConfig;
using keel::staging::PinnedMemory;
using keel::staging::StagingStream;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * 1024;
constexpr std::size_t kPage = 4096;

// Page-aligned heap memory, touched when allocated (as cudaHostAlloc commits
// its pages), so that no timed copy pays first-touch faults on a block.
class HeapPinned final : public PinnedMemory {
public:
    Result<void*> allocate(std::size_t bytes) override {
        const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kPage - 1) & ~(kPage - 1);
        void* p = std::aligned_alloc(kPage, rounded);
        if (p == nullptr)
            return Error(KEEL_STATUS_OUT_OF_MEMORY,
                         "[HeapPinned::allocate] aligned_alloc of " + std::to_string(rounded) + " bytes failed");
        std::memset(p, 0, rounded);
        return p;
    }
    void free(void* block) noexcept override { std::free(block); }
};

// A device stream on a simulated link: one thread runs the enqueued
// operations in order. Nothing ever fails, so every step sees stream_ok.
class SimStream {
public:
    // `device_bytes`: device memory for ports that copy bytes (--check).
    explicit SimStream(std::size_t device_bytes) : device_(device_bytes), thread_([this] { run(); }) {}
    SimStream(const SimStream&) = delete;
    SimStream& operator=(const SimStream&) = delete;
    ~SimStream() {
        {
            std::lock_guard lock(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }

    // Returns once every enqueued operation ran.
    void synchronize() {
        std::unique_lock lock(mu_);
        idle_cv_.wait(lock, [this] { return queue_.empty() && !running_; });
    }
    [[nodiscard]] unsigned char* device() noexcept { return device_.data(); }

    // One copy's view of the stream: one direction over a link of `gbps`
    // (10^9 bytes/s). With `copy_bytes` the device copies also move the bytes
    // between the block and the stream's device memory.
    class Port final : public StagingStream {
    public:
        Port(SimStream& stream, bool to_device, double gbps, bool copy_bytes)
            : stream_(stream), to_device_(to_device), gbps_(gbps), copy_bytes_(copy_bytes) {}

        Result<void> enqueue_host_step(Step step) override {
            return stream_.push([step = std::move(step)] { step(true); });
        }
        Result<void> enqueue_device_copy(std::uint64_t offset, void* block, std::size_t bytes) override {
            // n bytes at g GB/s take n / g ns.
            const auto duration = std::chrono::duration_cast<std::chrono::nanoseconds>(
                std::chrono::duration<double, std::nano>(static_cast<double>(bytes) / gbps_));
            unsigned char* device = copy_bytes_ ? stream_.device_.data() + offset : nullptr;
            const bool to_device = to_device_;
            SimStream& stream = stream_;
            return stream_.push([&stream, device, block, bytes, to_device, duration] {
                const Clock::time_point start = Clock::now();
                if (device != nullptr) {
                    if (to_device) std::memcpy(device, block, bytes);
                    else std::memcpy(block, device, bytes);
                }
                stream.sleep_until(start + duration, duration);
            });
        }

    private:
        SimStream& stream_;
        const bool to_device_;
        const double gbps_;
        const bool copy_bytes_;
    };

private:
    // Sleeps until about `end`, `duration` after the copy started. A wake-up
    // on a VM comes 50-100 µs late even with a 1 ns timer slack, as long as
    // a 4 MiB chunk takes at 50 GB/s, so the sleep ends early by the median
    // lateness (tracked by steps of 2 µs, which a preempted thread's
    // milliseconds cannot throw off), at most by half the copy. Stream thread
    // only.
    void sleep_until(Clock::time_point end, std::chrono::nanoseconds duration) {
        early_ = std::min(early_, duration / 2);
        const Clock::time_point wake = end - std::chrono::duration_cast<Clock::duration>(early_);
        if (Clock::now() >= wake) return;  // --check's memcpy took longer: no sleep to learn from
        std::this_thread::sleep_until(wake);
        constexpr std::chrono::nanoseconds kStep = std::chrono::microseconds(2);
        if (Clock::now() > end) early_ += kStep;
        else early_ = std::max(early_ - kStep, std::chrono::nanoseconds(0));
    }

    Result<void> push(std::function<void()> op) {
        {
            std::lock_guard lock(mu_);
            queue_.push_back(std::move(op));
        }
        cv_.notify_one();
        return keel::ok();
    }
    void run() {
#if defined(__linux__)
        // The default 50 µs timer slack would stretch every simulated DMA
        // (a 4 MiB chunk at 50 GB/s is 84 µs).
        prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
        std::unique_lock lock(mu_);
        for (;;) {
            cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
            if (queue_.empty()) return;
            std::function<void()> op = std::move(queue_.front());
            queue_.pop_front();
            running_ = true;
            lock.unlock();
            op();
            op = nullptr;  // a step's Transfer may go here: not under the lock
            lock.lock();
            running_ = false;
            if (queue_.empty()) idle_cv_.notify_all();
        }
    }

    std::vector<unsigned char> device_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::condition_variable idle_cv_;
    std::deque<std::function<void()>> queue_;  // guarded by mu_
    bool stop_ = false;                        // guarded by mu_
    bool running_ = false;                     // guarded by mu_
    std::chrono::nanoseconds early_{0};        // stream thread only
    std::thread thread_;                       // last: runs once the members above exist
};

struct Options {
    bool quick = false;
    double link_gbps = 0;  // 0: 10 and 50
    std::optional<std::size_t> chunk_kib;
    std::optional<unsigned> threads;
    unsigned reps = 0;  // 0: 5, or 3 with --quick
    bool check = false;
};

using keel::testing::load_average;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// GB/s (10^9 bytes/s) of the fastest of `reps` runs of `body`.
template <class Body>
double best_rate(std::size_t bytes, unsigned reps, Body&& body) {
    double best = 1e300;
    for (unsigned r = 0; r < reps; ++r) {
        const Clock::time_point start = Clock::now();
        body();
        best = std::min(best, seconds_since(start));
    }
    return static_cast<double>(bytes) / best * 1e-9;
}

// One staged copy of `size` bytes, run to completion; stops the program
// with the error when the staging refuses it (capacity) or fails.
void staged_copy(PageableStaging& staging, SimStream& stream, SimStream::Port& port, bool to_device,
                 unsigned char* host, std::size_t size) {
    Result<void> accepted = to_device ? staging.to_device(port, host, size) : staging.to_host(port, host, size);
    std::move(accepted).expect("keel-staging-bench: staged copy");
    stream.synchronize();
}

// One untimed copy whose device copies move the bytes; false when the bytes
// arrived wrong.
bool checked_copy(PageableStaging& staging, SimStream& stream, bool to_device, double gbps,
                  std::vector<unsigned char>& src, std::vector<unsigned char>& dst, std::size_t size) {
    unsigned char* device = stream.device();
    SimStream::Port port(stream, to_device, gbps, true);
    if (to_device) {
        std::memset(device, 0xEE, size);
        staged_copy(staging, stream, port, true, src.data(), size);
        return std::memcmp(device, src.data(), size) == 0;
    }
    for (std::size_t i = 0; i < size; ++i) device[i] = static_cast<unsigned char>(i * 7 + 3 + i / kPage);
    std::memset(dst.data(), 0, size);
    staged_copy(staging, stream, port, false, dst.data(), size);
    return std::memcmp(device, dst.data(), size) == 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"keel-staging-bench: PageableStaging (the plugins' staging of pageable memory) on a\n"
                 "simulated link, against the host copy alone, side by side in one run.",
                 "keel-staging-bench"};
    keel::cli::show_defaults(app);
    Options opt;
    std::size_t chunk_kib = 0;
    unsigned threads = 0;
    app.add_flag("--quick", opt.quick, "64 MiB only, best of 3");
    app.add_option("--link", opt.link_gbps, "One simulated link rate in GB/s (0: 10 and 50)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--chunk-kib", chunk_kib, "Chunk size in KiB (0: KEEL_PAGEABLE_CHUNK_KIB or 4096)")
        ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 30));
    app.add_option("--threads", threads,
                   "Host copy threads (0: KEEL_PAGEABLE_THREADS or one per hardware thread, at most 16)")
        ->check(CLI::Range(0u, 1024u));
    app.add_option("--reps", opt.reps, "Copies per row, the best counts (0: 5, or 3 with --quick)")
        ->check(CLI::Range(0u, 100'000u));
    app.add_flag("--check", opt.check, "Verify the bytes of one extra copy per row");
    if (const std::optional<int> exit_code = keel::cli::parse(app, argc, argv)) return *exit_code;
    if (chunk_kib != 0) opt.chunk_kib = chunk_kib;
    if (threads != 0) opt.threads = threads;

    StagingConfig config = keel::staging::with_environment(StagingConfig{}).expect("reading the environment");
    if (opt.chunk_kib) config.pageable.chunk_bytes = *opt.chunk_kib * kKiB;
    if (opt.threads) config.copy_threads = *opt.threads;
    const unsigned reps = opt.reps != 0 ? opt.reps : (opt.quick ? 3u : 5u);
    const std::vector<std::size_t> sizes =
        opt.quick ? std::vector<std::size_t>{64 * kMiB} : std::vector<std::size_t>{16 * kMiB, 64 * kMiB, 256 * kMiB};
    const std::vector<double> links = opt.link_gbps > 0 ? std::vector<double>{opt.link_gbps} : std::vector<double>{10, 50};
    constexpr unsigned kMaxBlocks = 4;
    const std::size_t max_size = *std::max_element(sizes.begin(), sizes.end());

    // Pageable memory, touched before anything is timed and reused.
    std::vector<unsigned char> src(max_size);
    std::vector<unsigned char> dst(max_size);
    for (std::size_t i = 0; i < max_size; ++i) src[i] = static_cast<unsigned char>(i * 131 + i / kPage);
    std::memset(dst.data(), 0xA5, max_size);

    SimStream stream(opt.check ? max_size : 0);
    std::vector<std::unique_ptr<PageableStaging>> stagings;
    for (unsigned b = 1; b <= kMaxBlocks; ++b) {
        StagingConfig c = config;
        c.pageable.blocks_per_copy = b;
        stagings.push_back(std::make_unique<PageableStaging>(std::make_unique<HeapPinned>(), c));
    }

    // The chunk the staging really uses (a power of two within the capacity):
    // the block of a one-block copy of the largest size.
    {
        SimStream::Port port(stream, true, 50, false);
        staged_copy(*stagings[0], stream, port, true, src.data(), max_size);
    }
    const auto first = stagings[0]->stats();
    const std::size_t chunk = static_cast<std::size_t>(first.blocks.held_bytes / std::max<std::uint64_t>(first.blocks.allocations, 1));

    // The host copy alone: the same threads, chunk by chunk through one block.
    CopyPool pool(CopyPoolConfig{.threads = config.copy_threads,
                                 .min_parallel_bytes = static_cast<std::size_t>(config.pageable.parallel_min_bytes),
                                 .min_slice_bytes = static_cast<std::size_t>(config.copy_slice_min_bytes)});
    HeapPinned pinned;
    void* block = std::move(pinned.allocate(chunk)).expect("keel-staging-bench: reference block");

    std::printf("keel-staging-bench: PageableStaging on a simulated link (device copies sleep bytes/rate, no CPU)\n");
    std::printf("chunk %zu KiB (configured %zu KiB), host threads %u (stats().host_threads), capacity %llu MiB,\n"
                "best of %u, load average %.2f\n",
                chunk / kKiB, static_cast<std::size_t>(config.pageable.chunk_bytes / kKiB), first.host_threads,
                static_cast<unsigned long long>(config.pageable.capacity / kMiB), reps, load_average());
    std::printf("GB/s = 10^9 bytes/s. h2d: pageable -> device, d2h: device -> pageable. of link: vs the nominal\n"
                "rate; host: the CopyPool alone through one block; serial: 1/(1/host + 1/link); link alone: the\n"
                "simulated device copies alone; of min: vs min(host, link alone); allocs: pinned allocations\n"
                "of that blocks setting so far (one staging per setting, reused for every row)\n\n");
    std::printf("    size  dir    link  blocks     GB/s  of link     host   serial  link alone  of min  allocs\n");

    bool all_checked = true;
    for (const std::size_t size : sizes) {
        for (const bool to_device : {true, false}) {
            const char* dir = to_device ? "h2d" : "d2h";
            const double host = best_rate(size, reps, [&] {
                for (std::size_t off = 0; off < size; off += chunk) {
                    const std::size_t n = std::min(chunk, size - off);
                    if (to_device) pool.copy(block, src.data() + off, n);
                    else pool.copy(dst.data() + off, block, n);
                }
            });
            for (const double link : links) {
                SimStream::Port plain(stream, to_device, link, false);
                const double alone = best_rate(size, reps, [&] {
                    for (std::size_t off = 0; off < size; off += chunk)
                        plain.enqueue_device_copy(off, block, std::min(chunk, size - off))
                            .expect("keel-staging-bench: device copy");
                    stream.synchronize();
                });
                const double serial = 1.0 / (1.0 / host + 1.0 / link);
                for (unsigned b = 1; b <= kMaxBlocks; ++b) {
                    PageableStaging& staging = *stagings[b - 1];
                    unsigned char* host_bytes = to_device ? src.data() : dst.data();
                    if (opt.check) {
                        if (!checked_copy(staging, stream, to_device, link, src, dst, size)) {
                            std::fprintf(stderr, "keel-staging-bench: %zu MiB %s, %u blocks: wrong bytes\n",
                                         size / kMiB, dir, b);
                            all_checked = false;
                        }
                    } else {
                        staged_copy(staging, stream, plain, to_device, host_bytes, size);  // warm-up
                    }
                    const double rate = best_rate(size, reps, [&] {
                        staged_copy(staging, stream, plain, to_device, host_bytes, size);
                    });
                    const auto stats = staging.stats();
                    std::printf("%4zu MiB  %s  %6.1f  %6u  %7.2f  %6.0f%%  %7.2f  %7.2f  %10.2f  %5.0f%%  %6llu\n",
                                size / kMiB, dir, link, b, rate, 100.0 * rate / link, host, serial, alone,
                                100.0 * rate / std::min(host, alone),
                                static_cast<unsigned long long>(stats.blocks.allocations));
                    std::fflush(stdout);
                    if (stats.short_copies != 0)
                        std::printf("          (%llu copies got fewer blocks than %u: capacity)\n",
                                    static_cast<unsigned long long>(stats.short_copies), b);
                }
            }
        }
    }
    pinned.free(block);
    std::printf("\nload average at the end %.2f%s\n", load_average(),
                opt.check ? (all_checked ? "; every checked copy had the right bytes" : "; WRONG BYTES") : "");
    return all_checked ? 0 : 1;
}
