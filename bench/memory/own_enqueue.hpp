// keel-memory-bench table 6's own-time line: keel's own CPU time per enqueue
// of a copy and a launch from one thread, over the same enqueues through the
// plugin alone (raw_plugin.hpp).
#pragma once

#include <keel/keel.hpp>

namespace keel_bench {

void print_own_enqueue(const keel::Runtime& runtime, const keel::Device& device, bool quick);

}  // namespace keel_bench
