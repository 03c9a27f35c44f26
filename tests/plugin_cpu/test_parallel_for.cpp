// parallel_for, linked straight from the plugin sources: every index runs
// exactly once, from several callers at the same time.
#include <gtest/gtest.h>

#include "parallel_for.hpp"

#include <atomic>
#include <thread>
#include <vector>

namespace keel::cpu {
namespace {

TEST(CpuParallelFor, RunsEveryIndexExactlyOnceFromConcurrentCallers) {
    start_thread_pool(4);
    constexpr std::size_t n = 100000;
    std::vector<std::thread> callers;
    std::vector<std::vector<std::atomic<int>>> hits(3);
    for (auto& h : hits) h = std::vector<std::atomic<int>>(n);
    for (int c = 0; c < 3; ++c)
        callers.emplace_back([&, c] {
            for (int rep = 0; rep < 5; ++rep)
                parallel_for(n, 1000, [&](std::size_t b, std::size_t e) {
                    for (std::size_t i = b; i < e; ++i) hits[c][i].fetch_add(1, std::memory_order_relaxed);
                });
        });
    for (auto& t : callers) t.join();
    stop_thread_pool();
    for (auto& h : hits)
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(h[i].load(), 5) << i;
}

TEST(CpuParallelFor, RunsSmallLoopsInlineWithoutAPool) {
    std::size_t calls = 0;
    parallel_for(10, 100, [&](std::size_t b, std::size_t e) {
        EXPECT_EQ(b, 0u);
        EXPECT_EQ(e, 10u);
        ++calls;
    });
    EXPECT_EQ(calls, 1u);
}

}  // namespace
}  // namespace keel::cpu
