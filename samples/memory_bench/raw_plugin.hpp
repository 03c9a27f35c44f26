// The plugin alone, for table 6's own-time line: the CPU time of the same
// enqueues (a 256-byte device-to-device copy, a "fill" launch) made straight
// through the C ABI of a second instance of the device's plugin, loaded from
// a copy of its file (so that it has globals of its own). keel's own time
// per enqueue is the table's figure minus this one.
#pragma once

#include <keel/keel.hpp>

#include <string>

namespace keel_bench {

// CPU ns per enqueue, the stream synchronized every 256 enqueues: with the
// synchronize calls, and of the enqueue calls alone.
struct EnqueueCpu {
    double cpu_ns = 0;
    double enqueue_ns = 0;
};

struct RawEnqueue {
    EnqueueCpu copy;    // memcpy_d2d
    EnqueueCpu launch;  // kernel_launch of "fill"
    std::string why_not;  // not empty: not measured, and why
};

RawEnqueue raw_enqueue_cost(const keel::Runtime& runtime, const keel::Device& device, int n);

}  // namespace keel_bench
