// Thread hand-off baselines measured in the same run as keel's figures, so
// that keel's synchronisation latency is reported as a ratio to what this
// machine can do at all.
#pragma once

#include <cstddef>

namespace keel::samples {

// Nanoseconds per round trip between two threads that spin on atomics:
// the floor for a hand-off between two busy threads.
double spin_ping_pong_ns(std::size_t round_trips);

// Nanoseconds per round trip between two threads that park on a
// mutex + condition variable: the cost of waking sleeping threads.
double condvar_ping_pong_ns(std::size_t round_trips);

}  // namespace keel::samples
