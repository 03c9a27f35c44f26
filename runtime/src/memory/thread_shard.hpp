// Per-thread shards of state that every thread of a device shares: the
// allocator's pools of one stream, the event pool's free lists. A thread
// that works on its own shard writes no cache line another thread writes,
// as long as threads do not outnumber the shards.
#pragma once

#include <cstdint>

namespace keel::memory {

inline constexpr std::uint32_t kMaxShards = 16;

// How many shards are in use: the machine's hardware threads, 1 to kMaxShards.
[[nodiscard]] std::uint32_t shard_count() noexcept;

// The calling thread's shard: the one fewest live threads held at its first
// call, given back when the thread exits.
[[nodiscard]] std::uint32_t thread_shard() noexcept;

}  // namespace keel::memory
