// The plugin alone, for table 6's own-time line: the CPU time of the same
// enqueues (a 256-byte device-to-device copy, a "fill" launch) made straight
// through the C ABI of a second instance of the device's plugin, loaded from
// a copy of its file (so that it has globals of its own). keel's own time
// per enqueue is the table's figure minus this one.
#pragma once

#include <keel/keel.hpp>

#include <string>

namespace keel_bench {

struct RawEnqueue {
    double copy_cpu_ns = 0;    // per memcpy_d2d, stream synchronized every 256
    double launch_cpu_ns = 0;  // per kernel_launch of "fill", likewise
    std::string why_not;       // not empty: not measured, and why
};

RawEnqueue raw_enqueue_cost(const keel::Runtime& runtime, const keel::Device& device, int n);

}  // namespace keel_bench
