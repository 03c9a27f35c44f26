// The per-stream pool of the caching allocator: segments (raw allocations)
// cut into blocks, best-fit free trees, splitting and merging. Plain data
// structures and algorithms: no device calls, no locking (the caller holds
// StreamPool::mu for every function here).
#pragma once

#include "memory/block_allocator.hpp"
#include "memory/stream_registry.hpp"
#include "memory/thread_shard.hpp"
#include <keel/memory_stats.hpp>

#include <keel/base/spin_lock.hpp>

#include <boost/intrusive/list.hpp>
#include <boost/intrusive/set.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace keel::memory {

namespace bi = boost::intrusive;

struct Segment;
struct StreamPool;

// A contiguous range of a segment. Blocks of one segment form a doubly
// linked list in address order; free neighbours are always merged, except
// while one of them is pending.
struct Block {
    keel_device_addr addr = 0;
    std::uint64_t size = 0;       // rounded
    std::uint64_t requested = 0;  // what the caller asked for (while allocated)
    Segment* segment = nullptr;
    Block* prev = nullptr;
    Block* next = nullptr;
    BlockState state = BlockState::free;
    // Free but parked in the exact-size cache: not in a tree, not merged.
    bool parked = false;
    Block* parked_next = nullptr;
    // Freed but held back from the free trees (by the quarantine of checked
    // mode, or leaked by a free that could not be ordered): allocated in
    // state, but no longer out (its share of the owner went at the free).
    bool held_back = false;
    bi::set_member_hook<bi::link_mode<bi::normal_link>> tree_hook;
};

struct Segment {
    keel_device_addr addr = 0;
    std::uint64_t size = 0;
    bool small = false;
    // The pool that owns the segment. It changes only when the segment moves
    // (move_segment, under both pools' locks), so a thread that holds one of
    // its blocks reads it with pool_of() and checks it again under the lock
    // (lock_pool_of).
    StreamPool* pool = nullptr;
    Block* first = nullptr;
    bi::list_member_hook<bi::link_mode<bi::normal_link>> list_hook;
};

struct BySizeThenAddress {
    bool operator()(const Block& a, const Block& b) const noexcept {
        return a.size < b.size || (a.size == b.size && a.addr < b.addr);
    }
};
struct SizeKey {
    bool operator()(std::uint64_t size, const Block& b) const noexcept { return size < b.size; }
    bool operator()(const Block& b, std::uint64_t size) const noexcept { return b.size < size; }
};

using FreeTree = bi::set<Block, bi::member_hook<Block, decltype(Block::tree_hook), &Block::tree_hook>,
                         bi::compare<BySizeThenAddress>, bi::constant_time_size<false>>;
using SegmentList =
    bi::list<Segment, bi::member_hook<Segment, decltype(Segment::list_hook), &Segment::list_hook>,
             bi::constant_time_size<false>>;

// Recycles objects so that splitting a block does not call malloc.
template <class T>
class Arena {
public:
    Arena() = default;
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;
    Arena(Arena&&) = delete;
    Arena& operator=(Arena&&) = delete;
    ~Arena() = default;

    T* make() {
        if (!free_.empty()) {
            T* t = free_.back();
            free_.pop_back();
            return t;
        }
        owned_.push_back(std::make_unique<T>());
        return owned_.back().get();
    }
    // `t` must be unlinked from every intrusive container.
    void recycle(T* t) {
        *t = T{};
        free_.push_back(t);
    }

private:
    std::vector<std::unique_ptr<T>> owned_;
    std::vector<T*> free_;
};

// A freed block waiting for its uses on other streams (one tracked event
// each). Shared by the tracker entries of those uses; the last one to go
// returns the events to the pool.
struct PendingFree {
    PendingFree(Block* b, StreamPool* p, EventPool* e, std::vector<RecordedUse> u,
                std::uint64_t order)
        : block(b), pool(p), events(e), uses(std::move(u)), free_seq(order),
          remaining(static_cast<int>(uses.size())) {}
    PendingFree(const PendingFree&) = delete;
    PendingFree& operator=(const PendingFree&) = delete;
    PendingFree(PendingFree&&) = delete;
    PendingFree& operator=(PendingFree&&) = delete;
    ~PendingFree() {
        for (const RecordedUse& use : uses) events->release(use.event);
    }

    Block* const block;
    StreamPool* pool;  // set under that pool's lock before anyone else sees it
    EventPool* const events;
    const std::vector<RecordedUse> uses;
    const std::uint64_t free_seq;  // order of frees, to find the oldest
    // Guarded by pool->mu:
    int remaining;         // uses not yet seen complete by a sweep
    bool settled = false;  // the block left the pending state (reused or freed)
};

// Aligned to a cache line: pools of different streams (or shards) are
// written by different threads, and must not share a line (false sharing).
struct alignas(64) StreamPool {
    StreamPool(keel_stream s, std::uint32_t shard_index)
        : stream(s), shard(shard_index), opened_as(stream_generation(s)) {}
    StreamPool(const StreamPool&) = delete;
    StreamPool& operator=(const StreamPool&) = delete;
    StreamPool(StreamPool&&) = delete;
    StreamPool& operator=(StreamPool&&) = delete;
    ~StreamPool() {
        small_free.clear();
        large_free.clear();
        segments.clear();
    }

    const keel_stream stream;
    const std::uint32_t shard;  // 0 serves large requests too
    // The stream's generation when the pool was made. A later stream on the
    // same handle takes the pool over (the closed one's work is done), so
    // calls on `stream` go to whichever of them is open, if any.
    const StreamGeneration opened_as;
    keel::base::SpinLock mu;  // sections are short and never call the plugin
    // Everything below is guarded by mu.
    FreeTree small_free;
    FreeTree large_free;
    SegmentList segments;
    std::vector<std::shared_ptr<PendingFree>> pending;  // in free order
    Arena<Block> blocks;
    Arena<Segment> segment_store;
    // Exact-size cache. Small blocks: LIFO heads indexed by size/quantum.
    std::vector<Block*> parked_head;
    std::vector<std::uint8_t> parked_count;
    std::uint64_t parked_bytes = 0;
    // Large blocks: a few LIFOs, one per recently freed size.
    struct LargeBin {
        std::uint64_t size = 0;
        Block* head = nullptr;
        std::uint8_t count = 0;
    };
    std::array<LargeBin, 8> large_bins{};
    std::uint64_t large_parked_bytes = 0;
    std::uint64_t allocated_bytes = 0;  // exact
    // Bytes freed here and not yet taken off BlockAllocator::allocated_bytes_:
    // this pool's next allocations take them first.
    std::uint64_t credit = 0;
    std::uint64_t allocations = 0;
    std::uint64_t cache_hits = 0;
    std::uint64_t allocated_count = 0;
    std::uint64_t requested_bytes = 0;
    std::uint64_t segment_count = 0;
    // The memory instance's ownership (BlockAllocator::set_owner): the
    // pool's blocks still out count here, not in a shared counter, and the
    // pool holds one reference to the instance for all of them: while its
    // handles live, and after they are gone while `owners` is not 0.
    std::uint64_t owners = 0;
    bool orphaned = false;  // the instance's handles are gone
    std::shared_ptr<void> owner;
    // Its stream closed (BlockAllocator::stream_closed): no stream reuses
    // what is freed here, so its segments move to the leftovers pool and go
    // back to the plugin as they empty. Cleared by any allocation from the
    // pool (a new stream on the handle): from then on its free blocks may
    // have that stream's work queued on them, and they stay.
    bool closed = false;
};

// The pools of one stream, by shard: shard 0 serves large requests and the
// small requests of the threads mapped to it; shard k > 0 only the small
// requests of its threads. Pools are created on first use.
struct StreamShards {
    std::array<std::unique_ptr<StreamPool>, kMaxShards> shard{};
};

// Splitting policy and sizes derived from the configuration.
struct SizePolicy {
    std::uint64_t quantum = 512;  // power of two >= device alignment
    unsigned quantum_shift = 9;   // log2(quantum): hot paths shift, never divide
    std::uint64_t small_limit = 0;
    std::uint64_t small_segment = 0;
    std::uint64_t large_segment = 0;
    std::uint64_t large_rounding = 0;
    std::uint32_t park_depth = 0;
    std::uint64_t park_bytes = 0;
    std::uint64_t large_park_bytes = 0;

    [[nodiscard]] std::uint64_t round(std::uint64_t size) const noexcept {
        return (size + quantum - 1) & ~(quantum - 1);
    }
    [[nodiscard]] bool is_small(std::uint64_t rounded) const noexcept { return rounded <= small_limit; }
    [[nodiscard]] std::uint64_t segment_size(std::uint64_t rounded) const noexcept;
    // A large block is split only when the rest is itself a large request,
    // so large segments are not cut into slivers.
    [[nodiscard]] bool should_split(bool small, std::uint64_t remainder) const noexcept {
        return small ? remainder >= quantum : remainder > small_limit;
    }
};

// Best-fit: the smallest free block of at least `rounded` bytes, split to
// size, marked allocated. nullptr when none fits.
Block* take_free_block(StreamPool& pool, const SizePolicy& policy, std::uint64_t rounded,
                       std::uint64_t requested);
// Makes a new segment of `seg_size` at `addr` and allocates `rounded` from it.
Block* carve_new_segment(StreamPool& pool, const SizePolicy& policy, keel_device_addr addr,
                         std::uint64_t seg_size, std::uint64_t rounded, std::uint64_t requested);
// Marks `block` free, merges it with free neighbours and files it in the
// free tree.
void return_block(StreamPool& pool, Block* block);
// The exact-size cache: park() keeps a freed small block unmerged (false
// when its LIFO or the pool's budget is full); take_parked() pops one of
// exactly `rounded` bytes; unpark_all() merges every parked block back.
bool park(StreamPool& pool, const SizePolicy& policy, Block* block);
Block* take_parked(StreamPool& pool, const SizePolicy& policy, std::uint64_t rounded,
                   std::uint64_t requested);
void unpark_all(StreamPool& pool);
// Unlinks every segment that is entirely free; the caller device_frees them.
struct ReleasedSegment {
    keel_device_addr addr = 0;
    std::uint64_t size = 0;
    StreamPool* pool = nullptr;
    bool small = false;
};
void collect_free_segments(StreamPool& pool, std::vector<ReleasedSegment>& out);
// Takes back a segment the plugin refused to free, as one free block.
void readopt_segment(StreamPool& pool, const ReleasedSegment& segment);
void snapshot_pool(StreamPool& pool, std::vector<SegmentSnapshot>& out);

// The pool that owns `segment` now (may change unless its lock is held).
[[nodiscard]] inline StreamPool* pool_of(const Segment& segment) noexcept {
    return std::atomic_ref<StreamPool*>(const_cast<StreamPool*&>(segment.pool)).load(std::memory_order_acquire);
}
// Locks and returns the pool that owns `block`'s segment; the caller unlocks
// its mu.
[[nodiscard]] StreamPool& lock_pool_of(const Block* block) noexcept;

// Moving a segment from one pool to another (a closed stream's segments that
// still hold live blocks go to a pool other streams read). Only a segment
// with no pending or parked block moves (pending records name their pool;
// parked blocks are unparked first).
[[nodiscard]] bool movable(const Segment& segment) noexcept;
// Both pools locked; `segment` movable and in `from`. Its free blocks and
// the counts of its allocated blocks go with it; returns how many blocks out
// it holds (their shares of the owner: the caller moves them).
std::uint64_t move_segment(StreamPool& from, StreamPool& to, Segment& segment);
// Both pools locked: `count` blocks out moved from `from` to `to`, and so do
// their shares of the owner. A reference `from` lets go of lands in `last`,
// for the caller to drop after the locks.
void move_owner_shares(StreamPool& from, StreamPool& to, std::uint64_t count, std::shared_ptr<void>& last);

}  // namespace keel::memory
