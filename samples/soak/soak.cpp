// keel-soak: a framework's day, compressed. T threads, each with its own
// stream, plus one stream all threads share, do random work for S seconds:
// uploads from containers (staged, moved in, pinned), memset, cross-stream
// hand-offs through events, holds, and pageable and pinned read-backs that
// are verified element by element. A call that fails is counted and its
// stream dropped and recreated, as a framework recovers; a read-back that
// succeeded with wrong data is a mismatch, which must never happen.
//
//   keel-soak --device cpu:0 --seconds 60 --threads 4 [--faults]
//
// Prints steps/s, mismatches, failed calls, RSS at each quarter and the
// memory statistics at the end; exits 1 on a mismatch.
#include "faults.hpp"

#include <keel/keel.hpp>

#include <CLI/CLI.hpp>

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

std::uint64_t rss_bytes() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) return 0;
    unsigned long long pages = 0, resident = 0;
    const int n = std::fscanf(f, "%llu %llu", &pages, &resident);
    std::fclose(f);
    return n == 2 ? resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

struct Counters {
    std::atomic<std::uint64_t> steps{0};
    std::atomic<std::uint64_t> mismatches{0};
    std::atomic<std::uint64_t> failed_calls{0};
    std::atomic<std::uint64_t> streams_replaced{0};
};

// Values a step writes: a function of a seed, so a read-back can be checked.
std::vector<std::uint32_t> pattern(std::uint32_t seed, std::size_t n) {
    std::vector<std::uint32_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = seed * 2654435761u + static_cast<std::uint32_t>(i);
    return v;
}

class Worker {
public:
    Worker(const keel::Device& device, std::optional<keel::Stream>& shared, std::mutex& shared_mu, Counters& counters,
           std::uint64_t seed, bool faults)
        : device_(device), shared_(shared), shared_mu_(shared_mu), counters_(counters), rng_(seed), faults_(faults) {}

    void run(Clock::time_point until) {
        while (Clock::now() < until) {
            if (faults_) soak::maybe_inject(rng_);
            if (!stream_) {
                auto s = keel::Stream::create(device_);
                if (!s.ok()) {
                    fail();
                    continue;
                }
                stream_.emplace(std::move(*s));
            }
            bool ok = false;
            switch (rng_() % 5) {
                case 0: ok = upload_and_read_back(); break;
                case 1: ok = hand_off(); break;
                case 2: ok = pinned_round_trip(); break;
                case 3: ok = memset_and_read_back(); break;
                default: ok = hold_and_move_in(); break;
            }
            if (!ok) {
                fail();
                stream_.reset();  // a failed stream is dropped and replaced
                counters_.streams_replaced.fetch_add(1, std::memory_order_relaxed);
            }
            counters_.steps.fetch_add(1, std::memory_order_relaxed);
        }
        stream_.reset();
    }

private:
    std::size_t elements() { return 1 + rng_() % (1 << (rng_() % 18)); }
    void fail() { counters_.failed_calls.fetch_add(1, std::memory_order_relaxed); }
    void check(const std::vector<std::uint32_t>& got, const std::vector<std::uint32_t>& want) {
        if (got.size() != want.size()) {
            counters_.mismatches.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        for (std::size_t i = 0; i < got.size(); ++i)
            if (got[i] != want[i]) {
                counters_.mismatches.fetch_add(1, std::memory_order_relaxed);
                std::fprintf(stderr, "mismatch at %zu of %zu: %u, wanted %u\n", i, got.size(), got[i], want[i]);
                return;
            }
    }
    // Reads `buf` back into a vector (pageable, unstaged) and checks it.
    bool read_back(const keel::Stream& s, const keel::Buffer& buf, const std::vector<std::uint32_t>& want) {
        auto view = buf.view(0, want.size() * 4);
        if (!view.ok()) return false;
        auto future = s.copy_to_vector<std::uint32_t>(*view);
        if (!future.ok()) return false;
        auto got = std::move(*future).get();
        if (!got.ok()) return false;
        check(*got, want);
        return true;
    }

    bool upload_and_read_back() {
        const std::vector<std::uint32_t> want = pattern(static_cast<std::uint32_t>(rng_()), elements());
        auto buf = keel::Buffer::allocate(*stream_, want.size() * 4);
        if (!buf.ok() || !stream_->copy(*buf, want).ok()) return false;  // staged from a container
        return read_back(*stream_, *buf, want);
    }
    bool memset_and_read_back() {
        const std::size_t n = elements();
        auto buf = keel::Buffer::allocate(*stream_, n * 4);
        if (!buf.ok() || !stream_->memset(*buf, 0x5a).ok()) return false;
        return read_back(*stream_, *buf, std::vector<std::uint32_t>(n, 0x5a5a5a5au));
    }
    // Produced on this thread's stream, consumed on the shared one after an
    // event: the consumer's copy and read-back must see the producer's data.
    bool hand_off() {
        const std::vector<std::uint32_t> want = pattern(static_cast<std::uint32_t>(rng_()), elements());
        auto src = keel::Buffer::allocate(*stream_, want.size() * 4);
        if (!src.ok() || !stream_->copy(*src, want).ok()) return false;
        auto event = keel::Event::create(device_);
        if (!event.ok() || !event->record(*stream_).ok()) return false;
        std::lock_guard lock(shared_mu_);
        if (!shared_) {
            auto s = keel::Stream::create(device_);
            if (!s.ok()) return false;
            shared_.emplace(std::move(*s));
        }
        const keel::Stream& shared = *shared_;
        auto dst = keel::Buffer::allocate(shared, want.size() * 4);
        bool ok = dst.ok() && shared.wait(*event).ok() && src->record_stream(shared).ok() &&
                  shared.copy(*dst, *src).ok() && read_back(shared, *dst, want);
        if (!ok) {
            // The shared stream may be the one that failed: replace it too.
            shared_.reset();
        }
        return ok;
    }
    bool pinned_round_trip() {
        const std::vector<std::uint32_t> want = pattern(static_cast<std::uint32_t>(rng_()), elements());
        const std::uint64_t bytes = want.size() * 4;
        auto in = keel::PinnedBuffer::allocate(device_, bytes);
        auto out = keel::PinnedBuffer::allocate(device_, bytes);
        if (!in.ok() || !out.ok()) return false;
        std::memcpy(in->data(), want.data(), bytes);
        auto buf = keel::Buffer::allocate(*stream_, bytes);
        if (!buf.ok() || !stream_->copy(*buf, *in).ok() || !stream_->copy(*out, *buf).ok()) return false;
        // The pinned buffers stay alive until the stream is done with them.
        if (!stream_->synchronize().ok()) return false;
        std::vector<std::uint32_t> got(want.size());
        std::memcpy(got.data(), out->data(), bytes);
        check(got, want);
        return true;
    }
    // A vector moved in, the buffer handed to a hold, a later read of a copy.
    bool hold_and_move_in() {
        std::vector<std::uint32_t> want = pattern(static_cast<std::uint32_t>(rng_()), elements());
        std::vector<std::uint32_t> moved = want;
        auto a = keel::Buffer::allocate(*stream_, want.size() * 4);
        auto b = keel::Buffer::allocate(*stream_, want.size() * 4);
        if (!a.ok() || !b.ok()) return false;
        if (!stream_->copy(*a, std::move(moved)).ok() || !stream_->copy(*b, *a).ok()) return false;
        if (!stream_->hold(std::move(*a)).ok()) return false;
        return read_back(*stream_, *b, want);
    }

    const keel::Device& device_;
    std::optional<keel::Stream>& shared_;  // guarded by shared_mu_
    std::mutex& shared_mu_;
    Counters& counters_;
    std::mt19937_64 rng_;
    bool faults_;
    std::optional<keel::Stream> stream_;
};

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"keel-soak: random framework-like work, verified element by element"};
    std::string device_name = "cpu:0";
    double seconds = 10;
    unsigned threads = 4;
    bool faults = false;
    app.add_option("--device", device_name, "device to soak");
    app.add_option("--seconds", seconds, "how long");
    app.add_option("--threads", threads, "host threads, one stream each, plus one shared stream");
    app.add_flag("--faults", faults, "inject driver/plugin faults where the device can");
    CLI11_PARSE(app, argc, argv);

    const std::string type = device_name.substr(0, device_name.find(':'));
    if (faults) soak::prepare_faults(type);
    keel::Runtime rt = keel::Runtime::create().expect("loading the plugins");
    auto device = rt.device(device_name);
    if (!device.ok()) {
        std::fprintf(stderr, "%s\n", device.error().message().c_str());
        return 2;
    }
    std::mutex shared_mu;
    std::optional<keel::Stream> shared;
    shared.emplace(keel::Stream::create(*device).expect("the shared stream"));
    keel::DeviceMemory memory = shared->memory().expect("the memory instance");
    Counters counters;
    const auto start = Clock::now();
    const auto until = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back([&, t] { Worker(*device, shared, shared_mu, counters, 1000 + t, faults).run(until); });
    std::printf("keel-soak on %s, %u threads, %.0f s%s\n", device_name.c_str(), threads, seconds,
                faults ? ", faults injected" : "");
    std::printf("| quarter | steps | RSS MiB |\n| --- | --- | --- |\n");
    for (int q = 1; q <= 4; ++q) {
        std::this_thread::sleep_until(start + (until - start) * q / 4);
        std::printf("| %d | %llu | %.1f |\n", q, static_cast<unsigned long long>(counters.steps.load()),
                    static_cast<double>(rss_bytes()) / (1 << 20));
        std::fflush(stdout);
    }
    for (std::thread& t : pool) t.join();
    const double took = std::chrono::duration<double>(Clock::now() - start).count();
    if (shared && !shared->synchronize().ok()) counters.failed_calls.fetch_add(1);
    shared.reset();
    memory.synchronize();
    std::printf("steps/s %.0f, mismatches %llu, failed calls %llu, streams replaced %llu\n",
                static_cast<double>(counters.steps.load()) / took,
                static_cast<unsigned long long>(counters.mismatches.load()),
                static_cast<unsigned long long>(counters.failed_calls.load()),
                static_cast<unsigned long long>(counters.streams_replaced.load()));
    std::printf("memory: %s\n", memory.stats().to_string().c_str());
    return counters.mismatches.load() == 0 ? 0 : 1;
}
