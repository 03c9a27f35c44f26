// A plugin-wide pool of threads, one per core (KEEL_CPU_THREADS overrides),
// that kernels use to spread a loop over the cores. Several stream workers
// may run parallel_for at once: their jobs share the pool, and each caller
// also works on its own job, so a job always makes progress even when every
// pool thread is busy elsewhere.
//
// The pool starts its threads lazily (on the first parallel job) and stops
// them at plugin_shutdown. Idle pool threads sleep on a condition variable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace keel::cpu {

// Runs body(begin, end) over [0, n) in chunks of at least `grain` items,
// on the calling thread and the pool; returns when every chunk ran.
// Small loops (n <= grain, or a pool of one) run inline.
void parallel_for(std::size_t n, std::size_t grain,
                  const std::function<void(std::size_t begin, std::size_t end)>& body);

// Plugin lifetime (entry.cpp): threads = 0 means one per core.
void start_thread_pool(std::uint32_t threads);
void stop_thread_pool() noexcept;
[[nodiscard]] std::uint32_t thread_pool_size() noexcept;

}  // namespace keel::cpu
