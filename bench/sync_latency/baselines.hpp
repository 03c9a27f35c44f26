// Thread hand-off baselines measured in the same run as keel's figures, so
// that keel's synchronisation latency is reported as a ratio to what this
// machine can do at all.
#pragma once

#include <chrono>
#include <cstddef>

namespace keel::samples {

// Nanoseconds per round trip between two threads that spin on atomics:
// the floor for a hand-off between two busy threads.
double spin_ping_pong_ns(std::size_t round_trips);

// Nanoseconds per round trip between two threads that park on a
// mutex + condition variable: the cost of waking sleeping threads.
double condvar_ping_pong_ns(std::size_t round_trips);

// The same, but each thread sleeps `pause` before it passes the ball back,
// so the other has been asleep that long when it is woken (as a parked
// stream worker is). The sleeps are not counted.
double condvar_ping_pong_after_pause_ns(std::size_t round_trips, std::chrono::microseconds pause);

}  // namespace keel::samples
