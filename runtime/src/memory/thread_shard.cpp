#include "memory/thread_shard.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <thread>

namespace keel::memory {

namespace {

std::array<std::atomic<std::uint32_t>, kMaxShards> g_shard_threads{};

struct ShardLease {
    ShardLease() noexcept {
        std::uint32_t fewest = std::numeric_limits<std::uint32_t>::max();
        for (std::uint32_t i = 0; i < shard_count(); ++i) {
            const std::uint32_t n = g_shard_threads[i].load(std::memory_order_relaxed);
            if (n < fewest) fewest = n, shard = i;
        }
        g_shard_threads[shard].fetch_add(1, std::memory_order_relaxed);
    }
    ShardLease(const ShardLease&) = delete;
    ShardLease& operator=(const ShardLease&) = delete;
    ~ShardLease() { g_shard_threads[shard].fetch_sub(1, std::memory_order_relaxed); }
    std::uint32_t shard = 0;
};

}  // namespace

std::uint32_t shard_count() noexcept {
    static const std::uint32_t count =
        std::clamp<std::uint32_t>(std::thread::hardware_concurrency(), 1, kMaxShards);
    return count;
}

std::uint32_t thread_shard() noexcept {
    thread_local const ShardLease lease;
    return lease.shard;
}

}  // namespace keel::memory
