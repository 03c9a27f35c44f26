// Printing the results as tables with keel/raw ratios and the goals.
#pragma once

#include "benchmarks.hpp"

#include <string>
#include <vector>

namespace keel::bench {

// The CUDA plugin's goals: keel within 5% of raw CUDA bandwidth, 150 ns per call.
inline constexpr double kBandwidthGoal = 0.95;        // keel/raw, for >= kBandwidthGoalFrom bytes
inline constexpr uint64_t kBandwidthGoalFrom = 64ull << 20;
inline constexpr double kOverheadGoalNs = 150.0;      // added per call

// Each returns the number of goals missed in its table.
int print_bandwidth(const char* title, const std::vector<BandwidthRow>& rows);
int print_overhead(const std::vector<OverheadRow>& rows);
void print_fence(const FenceResult& fence);

}  // namespace keel::bench
