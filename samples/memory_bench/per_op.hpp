// keel-memory-bench section 6: the cost of one operation of the hot path
// (allocation, copy, launch, hold, record_stream, event, fence) with 1, 2 and
// 4 threads, each on a stream of its own and all on one stream, beside
// malloc/free and a mutex-guarded free list on the same loop.
#pragma once

#include <keel/keel.hpp>

#include <string>

namespace keel_bench {

// `only`: run just the operation of that name ("" = all), e.g. under perf.
void bench_per_op(const keel::Device& device, bool quick, const std::string& only);

}  // namespace keel_bench
