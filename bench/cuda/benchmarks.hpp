// The three measurements of keel-cuda-bench. Each runs the keel path
// (through the plugin's C table) and the raw CUDA path in the same process,
// interleaved, on the same device.
#pragma once

#include "keel_cuda.hpp"

#include <keel/testing/bench_stats.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace keel::bench {

struct Setup {
    const KeelCuda& keel;
    keel_device device;   // keel's cuda:<index>
    int cuda_ordinal;     // the same GPU for raw calls
    bool quick;           // fewer repetitions (smoke run)
};

enum class Direction { host_to_device, device_to_host };

struct BandwidthRow {
    uint64_t bytes;
    double keel_gbps;  // best of several rounds
    double raw_gbps;
};
[[nodiscard]] std::vector<BandwidthRow> measure_bandwidth(const Setup& setup, Direction direction);

struct OverheadRow {
    std::string operation;
    double keel_ns;  // host time per enqueue call, median over batches
    double raw_ns;
};
[[nodiscard]] std::vector<OverheadRow> measure_overhead(const Setup& setup);

struct FenceResult {
    double keel_us;  // median round trip
    double raw_us;
};
[[nodiscard]] FenceResult measure_fence(const Setup& setup);

// ---- shared helpers -------------------------------------------------------

using Clock = std::chrono::steady_clock;

[[nodiscard]] inline double seconds_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

using keel::testing::median;

}  // namespace keel::bench
