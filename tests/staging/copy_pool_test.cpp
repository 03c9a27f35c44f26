// CopyPool: every byte lands, with one thread and with many, from several
// threads at once (this suite also runs under TSan), and a batch is not
// done before its slices are.
#include <keel/staging/copy_pool.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <thread>
#include <vector>

namespace keel::staging {
namespace {

std::vector<std::uint8_t> pattern(std::size_t n, std::uint8_t seed) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i * 31 + seed);
    return v;
}

class CopyPoolThreads : public ::testing::TestWithParam<unsigned> {};

TEST_P(CopyPoolThreads, CopiesEveryByteOfAnySize) {
    CopyPoolConfig config;
    config.threads = GetParam();
    CopyPool pool(config);
    EXPECT_EQ(pool.threads(), GetParam());
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4095}, std::size_t{256 * 1024},
                          std::size_t{256 * 1024 + 1}, std::size_t{3 * 1024 * 1024 + 777}}) {
        const auto src = pattern(n, 7);
        std::vector<std::uint8_t> dst(n, 0);
        pool.copy(dst.data(), src.data(), n);
        EXPECT_EQ(dst, src) << n;
    }
}

TEST_P(CopyPoolThreads, OneBatchWaitsForAllOfItsCopies) {
    CopyPoolConfig config;
    config.threads = GetParam();
    CopyPool pool(config);
    const std::size_t n = 1024 * 1024;
    std::vector<std::vector<std::uint8_t>> srcs, dsts;
    for (int i = 0; i < 6; ++i) {
        srcs.push_back(pattern(n, static_cast<std::uint8_t>(i)));
        dsts.emplace_back(n, 0);
    }
    {
        CopyBatch batch;
        for (std::size_t i = 0; i < srcs.size(); ++i) pool.copy_async(dsts[i].data(), srcs[i].data(), n, batch);
        pool.wait(batch);
    }
    for (std::size_t i = 0; i < srcs.size(); ++i) EXPECT_EQ(dsts[i], srcs[i]);
    if (GetParam() > 1) EXPECT_EQ(pool.parallel_copies(), 6u);
    else EXPECT_EQ(pool.parallel_copies(), 0u);
}

TEST_P(CopyPoolThreads, ABatchDestroyedWithoutWaitWaitsForItsSlices) {
    CopyPoolConfig config;
    config.threads = GetParam();
    CopyPool pool(config);
    const std::size_t n = 2 * 1024 * 1024;
    const auto src = pattern(n, 3);
    std::vector<std::uint8_t> dst(n, 0);
    {
        CopyBatch batch;
        pool.copy_async(dst.data(), src.data(), n, batch);
    }
    EXPECT_EQ(dst, src);
}

TEST_P(CopyPoolThreads, ThreadsSharingAPoolEachGetTheirOwnBytes) {
    CopyPoolConfig config;
    config.threads = GetParam();
    CopyPool pool(config);
    constexpr int kCallers = 4;
    std::vector<std::thread> callers;
    std::vector<int> wrong(kCallers, 0);
    for (int c = 0; c < kCallers; ++c) {
        callers.emplace_back([&, c] {
            for (int rep = 0; rep < 8; ++rep) {
                const std::size_t n = 512 * 1024 + static_cast<std::size_t>(rep) * 4096;
                const auto src = pattern(n, static_cast<std::uint8_t>(c * 16 + rep));
                std::vector<std::uint8_t> dst(n, 0);
                pool.copy(dst.data(), src.data(), n);
                if (dst != src) ++wrong[static_cast<std::size_t>(c)];
            }
        });
    }
    for (auto& t : callers) t.join();
    EXPECT_EQ(std::accumulate(wrong.begin(), wrong.end(), 0), 0);
}

INSTANTIATE_TEST_SUITE_P(Threads, CopyPoolThreads, ::testing::Values(1u, 2u, 7u, 16u));

TEST(CopyPool, DefaultsToTheHardwareThreadsUpToSixteen) {
    CopyPool pool;
    EXPECT_GE(pool.threads(), 1u);
    EXPECT_LE(pool.threads(), 16u);
}

}  // namespace
}  // namespace keel::staging
