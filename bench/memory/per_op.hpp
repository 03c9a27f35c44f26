// keel-memory-bench section 6: the cost of one operation of the hot path
// (allocation, copy, launch, hold, record_stream, event, fence) with 1, 2, 4
// (or the given numbers of) threads, each on a stream of its own and all on
// one stream, beside malloc/free and a mutex-guarded free list on the same loop.
#pragma once

#include <keel/keel.hpp>

#include <string>
#include <vector>

namespace keel_bench {

struct PerOpOptions {
    bool quick = false;
    std::string only;                 // just the operation of that name ("" = all; "own enqueue": the
                                      // own-time lines alone), e.g. under perf
    std::vector<int> threads{1, 2, 4};  // ascending; the first is the x1 and speed-up reference
    int reps = 3;                     // runs per row; the best is printed
    bool own_streams = true;          // the "own" columns: a stream per thread
    bool one_stream = true;           // the "one" columns: all threads on one stream
};

// The names --op accepts: every operation of the table, and "own enqueue".
[[nodiscard]] std::vector<std::string> per_op_names();

// Also prints keel's own enqueue time of a copy and a launch (own_enqueue.hpp).
void bench_per_op(const keel::Runtime& runtime, const keel::Device& device, const PerOpOptions& options);

}  // namespace keel_bench
