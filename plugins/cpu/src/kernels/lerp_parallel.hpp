// Spreads a lerp kernel's tasks over the CPU plugin's thread pool
// (parallel_for.hpp). Results never depend on which thread ran which task:
// the tasks are fixed by the shapes alone.
#pragma once

#include "../parallel_for.hpp"

#include <cstdint>
#include <functional>

namespace keel::cpu::lerp {

// Runs body(t) for t in [0, count), one task per pool chunk item; body must
// not throw. Blocks until every task ran.
inline void parallel_tasks(std::int64_t count, const std::function<void(std::int64_t)>& body) {
    if (count <= 0) return;
    parallel_for(static_cast<std::size_t>(count), 1, [&](std::size_t begin, std::size_t end) {
        for (std::size_t t = begin; t < end; ++t) body(static_cast<std::int64_t>(t));
    });
}

}  // namespace keel::cpu::lerp
