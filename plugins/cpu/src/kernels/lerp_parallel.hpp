// Spreads a kernel's tasks over the host's cores. Stand-in until the CPU
// plugin's own parallel_for lands: the kernels only need "run body(t) for
// every t, return when all are done", and their results never depend on
// which thread ran which task (tasks are fixed by the shape alone).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <system_error>
#include <thread>
#include <vector>

namespace keel::cpu::lerp {

// Runs body(t) for t in [0, count); body must not throw. Blocks until done.
inline void parallel_tasks(std::int64_t count, const std::function<void(std::int64_t)>& body) {
    const std::int64_t cores = std::max(1u, std::thread::hardware_concurrency());
    const std::int64_t threads = std::min(cores, count);
    if (threads <= 1) {
        for (std::int64_t t = 0; t < count; ++t) body(t);
        return;
    }
    std::atomic<std::int64_t> next{0};
    auto work = [&] {
        for (std::int64_t t = next.fetch_add(1); t < count; t = next.fetch_add(1)) body(t);
    };
    std::vector<std::thread> helpers;
    helpers.reserve(static_cast<std::size_t>(threads - 1));
    try {
        for (std::int64_t i = 1; i < threads; ++i) helpers.emplace_back(work);
    } catch (const std::system_error&) {
        // Fewer helpers than hoped: the remaining tasks run on the threads we have.
    }
    work();
    for (std::thread& h : helpers) h.join();
}

}  // namespace keel::cpu::lerp
