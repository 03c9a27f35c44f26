#include "report.hpp"

#include <cstdio>

namespace keel::bench {

namespace {

std::string size_text(uint64_t bytes) {
    if (bytes >= (1ull << 20)) return std::to_string(bytes >> 20) + " MiB";
    return std::to_string(bytes >> 10) + " KiB";
}

}  // namespace

int print_bandwidth(const char* title, const std::vector<BandwidthRow>& rows) {
    int missed = 0;
    std::printf("\n%s (GB/s, best of several runs; goal: keel >= %.0f%% of raw from %s)\n", title,
                kBandwidthGoal * 100, size_text(kBandwidthGoalFrom).c_str());
    std::printf("  %-10s %10s %10s %10s  %s\n", "size", "keel", "raw", "keel/raw", "goal");
    for (const BandwidthRow& r : rows) {
        const double ratio = r.raw_gbps > 0 ? r.keel_gbps / r.raw_gbps : 0.0;
        const char* verdict = "";
        if (r.bytes >= kBandwidthGoalFrom) {
            const bool met = ratio >= kBandwidthGoal;
            verdict = met ? "met" : "MISSED";
            if (!met) ++missed;
        }
        std::printf("  %-10s %10.2f %10.2f %9.1f%%  %s\n", size_text(r.bytes).c_str(), r.keel_gbps, r.raw_gbps,
                    ratio * 100, verdict);
    }
    return missed;
}

int print_overhead(const std::vector<OverheadRow>& rows) {
    int missed = 0;
    std::printf("\nhost time per enqueue call (ns, median of batches; goal: keel adds <= %.0f ns)\n",
                kOverheadGoalNs);
    std::printf("  %-34s %9s %9s %9s %9s  %s\n", "operation", "keel", "raw", "added", "keel/raw", "goal");
    for (const OverheadRow& r : rows) {
        const double added = r.keel_ns - r.raw_ns;
        const bool met = added <= kOverheadGoalNs;
        if (!met) ++missed;
        std::printf("  %-34s %9.0f %9.0f %9.0f %8.2fx  %s\n", r.operation.c_str(), r.keel_ns, r.raw_ns, added,
                    r.raw_ns > 0 ? r.keel_ns / r.raw_ns : 0.0, met ? "met" : "MISSED");
    }
    return missed;
}

void print_fence(const FenceResult& f) {
    std::printf("\ncross-stream fence round trip (us, median): kernel on A, record on A, B waits,\n"
                "kernel on B, host waits for B\n");
    std::printf("  %-34s %9s %9s %9s %9s\n", "", "keel", "raw", "added", "keel/raw");
    std::printf("  %-34s %9.2f %9.2f %9.2f %8.2fx\n", "round trip", f.keel_us, f.raw_us, f.keel_us - f.raw_us,
                f.raw_us > 0 ? f.keel_us / f.raw_us : 0.0);
}

}  // namespace keel::bench
