// keel-soak --matrix: every fault the device under test can inject, at each
// of its first positions, under each kind of soak step, one case at a time.
// Each case must end with verified data or an error (never wrong data),
// within a bound (a hang aborts, naming the case), and a step without the
// fault must then succeed on a new stream; at the end no memory is left
// reserved and the process has not grown beyond a bound.
#pragma once

#include <string>

namespace soak {

struct MatrixOptions {
    std::string device;        // "cpu:0" or "level_zero:0" (on a driver that injects faults)
    unsigned positions = 4;    // each fault after 0 .. positions-1 calls that run normally
    double case_limit_s = 20;  // a case running longer is a hang
};

// Prints the table; returns the process's exit status (0: every case passed).
[[nodiscard]] int run_matrix(const MatrixOptions& options);

}  // namespace soak
