// Bandwidth of Stream::copy between devices next to a copy on one device,
// measured in one run so that the ratios compare like with like:
//   same device  cpu:0 -> cpu:0   memcpy_d2d
//   peer         cpu:0 -> cpu:1   memcpy_peer (KEEL_CPU_DEVICES=2)
//   staged       cpu:0 -> level_zero:0, where that device loads (pinned
//                host memory, a helper stream and ordering both ways)
// Each figure is the median of `reps` runs of `iters` back-to-back copies on
// one stream, timed from the first enqueue to the stream's synchronize.
// Usage: keel_peer_copy_bench [--quick] [--pair A,B]
//   --pair cuda:0,cuda:1 measures A -> A against A -> B (default cpu:0,cpu:1,
//   where cpu:0 -> level_zero:0 is measured too, when it loads).
#include <keel/keel.hpp>
#include <keel/testing/bench_stats.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

using keel::testing::median;

// GB/s of `iters` copies of `bytes` from memory of `from` to memory of `to`,
// on a stream of `to`.
std::optional<double> bandwidth(const keel::Device& from, const keel::Device& to, std::uint64_t bytes, int iters,
                                int reps) {
    auto sf = keel::Stream::create(from);
    auto st = keel::Stream::create(to);
    if (!sf.ok() || !st.ok()) return std::nullopt;
    auto src = keel::Buffer::allocate(*sf, bytes);
    auto dst = keel::Buffer::allocate(*st, bytes);
    if (!src.ok() || !dst.ok()) return std::nullopt;
    if (!sf->memset(*src, 7).ok() || !sf->synchronize().ok() || !st->order_after(*sf).ok()) return std::nullopt;
    std::vector<double> runs;
    auto failed = [&](const keel::Result<void>& r) {
        if (r.ok()) return false;
        std::fprintf(stderr, "keel_peer_copy_bench: %s -> %s, %llu bytes: %s\n", from.name().c_str(),
                     to.name().c_str(), static_cast<unsigned long long>(bytes), r.error().message().c_str());
        return true;
    };
    for (int r = 0; r < reps; ++r) {
        const auto t0 = Clock::now();
        for (int i = 0; i < iters; ++i)
            if (failed(st->copy(dst->view(), src->view()))) return std::nullopt;
        if (failed(st->synchronize())) return std::nullopt;
        if (r == 0 && reps > 1) continue;  // the first run warms up
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        runs.push_back(static_cast<double>(bytes) * iters / s / 1e9);
    }
    (void)sf->order_after(*st);  // src is freed on its own stream after the copies
    return median(runs);
}

}  // namespace

int main(int argc, char** argv) {
    bool quick = false;
    std::string first = "cpu:0", second = "cpu:1";
    bool default_pair = true;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--quick") {
            quick = true;
        } else if (arg == "--pair" && i + 1 < argc && std::strchr(argv[i + 1], ',') != nullptr) {
            const std::string pair = argv[++i];
            first = pair.substr(0, pair.find(','));
            second = pair.substr(pair.find(',') + 1);
            default_pair = false;
        } else {
            std::fprintf(stderr, "usage: keel_peer_copy_bench [--quick] [--pair A,B]\n");
            return 1;
        }
    }
    ::setenv("KEEL_CPU_DEVICES", "2", 0);
    auto rt = keel::Runtime::create();
    if (!rt.ok()) {
        std::fprintf(stderr, "keel_peer_copy_bench: %s\n", rt.error().message().c_str());
        return 1;
    }
    auto cpu0 = rt->device(first);
    auto cpu1 = rt->device(second);
    if (!cpu0.ok() || !cpu1.ok()) {
        std::fprintf(stderr, "keel_peer_copy_bench: needs %s and %s (cpu:1: KEEL_CPU_DEVICES=2)\n", first.c_str(),
                     second.c_str());
        return 1;
    }
    auto ze = default_pair ? rt->device("level_zero:0") : keel::Result<keel::Device>(keel::Error(KEEL_STATUS_NOT_FOUND, ""));
    const char* path = keel::copy_path(*cpu0, *cpu1) == keel::CopyPath::peer ? "peer" : "staged";
    std::printf("%s -> %s: %s copy; same device: %s -> %s\n", first.c_str(), second.c_str(), path, first.c_str(),
                first.c_str());
    std::printf("%-10s %12s %12s %12s %18s %18s\n", "bytes", "same GB/s", "peer GB/s", "staged GB/s",
                "peer / same device", "staged / same device");
    const std::vector<std::uint64_t> sizes =
        quick ? std::vector<std::uint64_t>{1u << 20} : std::vector<std::uint64_t>{1u << 16, 1u << 20, 16u << 20, 64u << 20};
    for (const std::uint64_t bytes : sizes) {
        const int iters = quick ? 2 : static_cast<int>(std::max<std::uint64_t>(4, (256u << 20) / bytes));
        const int reps = quick ? 1 : 5;
        const auto same = bandwidth(*cpu0, *cpu0, bytes, iters, reps);
        const auto peer = bandwidth(*cpu0, *cpu1, bytes, iters, reps);
        const auto staged = ze.ok() ? bandwidth(*cpu0, *ze, bytes, iters, reps) : std::nullopt;
        if (!same || !peer) {
            std::fprintf(stderr, "keel_peer_copy_bench: a copy failed\n");
            return 1;
        }
        char staged_text[32] = "-";
        char staged_ratio[32] = "-";
        if (staged.has_value()) {
            const double staged_gbps = staged.value_or(0.0);
            std::snprintf(staged_text, sizeof staged_text, "%.2f", staged_gbps);
            std::snprintf(staged_ratio, sizeof staged_ratio, "%.2f", staged_gbps / *same);
        }
        std::printf("%-10llu %12.2f %12.2f %12s %18.2f %18s\n", static_cast<unsigned long long>(bytes), *same, *peer,
                    staged_text, *peer / *same, staged_ratio);
    }
    return 0;
}
