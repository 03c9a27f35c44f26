// The stream-safe caching allocator of one device, over DeviceOps.
//
// Each stream has its own pool (own lock, own segments, own free trees): a
// block belongs to the stream it was allocated on and is reused only by that
// stream, because the stream's in-order execution makes reuse after a free
// safe without any event. When a stream closes (its work done), its
// segments move to a leftovers pool that every stream reads before it
// reserves a new segment, live blocks and all: a block freed later goes to
// whichever stream's pool its segment is in by then (block_allocator_closed.cpp). Small requests of a stream are further spread over
// a few pools by calling thread (shards), so that threads allocating on one
// stream do not serialise on one lock and one set of cache lines. A use on
// another stream must be declared with record_use() (Buffer::record_stream);
// freeing such a block makes it
// *pending* until those uses complete.
//
// As in PyTorch, record_use only remembers the stream; free() records an
// event on every recorded stream, so everything enqueued there before the
// free is covered, whether it was enqueued before or after record_use. A
// recorded stream the runtime closed before the free is skipped: closing
// waited for its work (memory/stream_registry.hpp).
//
// Checked mode (AllocatorConfig::checked) adds guard bytes, poisoned and
// quarantined frees, view checks and checker annotations
// (memory/checked_blocks.hpp); without caching (AllocatorConfig::caching
// false) every block is its own plugin allocation, freed once its stream and
// recorded uses are done.
//
// Out of memory, in order: sweep completed work without blocking -> wait for
// the events of pending frees -> return every entirely free segment of every
// stream to the plugin -> retry the raw allocation once (also at the exact
// size) -> fail with OUT_OF_MEMORY and the statistics in the message.
#pragma once

#include "memory/checked_blocks.hpp"
#include "memory/completion_tracker.hpp"
#include <keel/memory_config.hpp>
#include "memory/device_ops.hpp"
#include "memory/event_pool.hpp"
#include "memory/stream_registry.hpp"
#include <keel/memory_stats.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

namespace keel::detail {
struct DeviceSlot;
}  // namespace keel::detail

namespace keel::memory {

struct Block;         // private to the allocator
struct StreamPool;    // private to the allocator
struct StreamShards;  // private to the allocator: a stream's pools
struct PendingFree;
struct SizePolicy;
struct ReleasedSegment;

// A use of a block on a stream other than its own. The event is recorded
// when the block is freed.
struct RecordedUse {
    keel_stream stream = nullptr;
    StreamGeneration generation = 0;  // which stream of that handle
    keel_event event = nullptr;       // from the EventPool, once freed
    std::uint64_t seq = 0;            // CompletionTracker::next_seq(stream) at the free
    // A stream of another device (Buffer::record_stream across devices):
    // the free orders the block's own stream after it instead of recording
    // an event (memory/buffer.cpp); never reaches the allocator.
    const detail::DeviceSlot* foreign = nullptr;
};

// Sync: every member may be called from any thread. No lock is held across a
// plugin call, except that wait-at-reuse enqueues device waits while the
// block is reserved for the caller (no lock held either).
// Set (never cleared) once some allocator of the process runs in checked
// mode; a line of its own, read by every copy and launch.
alignas(64) extern std::atomic<bool> g_checked_memory_anywhere;

// Whether some allocator of the process runs in checked mode (so that the
// hot paths of copies and launches test one flag, inline, when none does).
[[nodiscard]] inline bool checked_memory_anywhere() noexcept {
    return g_checked_memory_anywhere.load(std::memory_order_relaxed);
}

class BlockAllocator {
public:
    BlockAllocator(DeviceOps& ops, EventPool& events, CompletionTracker& tracker,
                   const AllocatorConfig& config, const BackPressureConfig& limits);
    BlockAllocator(const BlockAllocator&) = delete;
    BlockAllocator& operator=(const BlockAllocator&) = delete;
    BlockAllocator(BlockAllocator&&) = delete;
    BlockAllocator& operator=(BlockAllocator&&) = delete;
    // Returns every cached segment to the plugin. The tracker must have been
    // drained first; blocks still allocated are leaked (and logged).
    ~BlockAllocator();

    // A block of at least `size` (> 0) bytes for use on `stream`. In
    // checked mode, a guard found overwritten fails this (and every later
    // allocation) with the finding.
    [[nodiscard]] Result<Block*> allocate(keel_stream stream, std::uint64_t size);

    // Frees `block`: records an event on each recorded stream still open.
    // Without uses it is at once reusable by its own stream (stream-ordered).
    // With uses, it becomes pending until each use's event completes; this
    // may block when pending frees are past their bounds. Gives back the
    // block's share of the owner last: the owner (and this allocator) may be
    // destroyed by it.
    void free(Block* block, std::vector<RecordedUse> uses) noexcept;

    // Ownership. Every allocated block keeps `owner` (the memory instance)
    // alive, without a shared counter per block: each pool counts its blocks
    // out under its own lock and holds one reference to the owner for all of
    // them. set_owner() names it (once, before the first allocation);
    // orphan() says that every other reference is gone, so each pool lets go
    // of its reference as soon as it has no block out (at once if it has
    // none); adopt() takes the references back when the owner has users again.
    void set_owner(const std::shared_ptr<void>& owner);
    void orphan() noexcept;
    void adopt(const std::shared_ptr<void>& owner) noexcept;
    // A share of the owner for something other than a block (a Fence),
    // counted as a block out in the calling thread's pool of `stream`. The
    // caller holds a handle of the owner (as for allocate()). Give it back
    // with let_go(), from any thread: the owner may go with it.
    [[nodiscard]] StreamPool& share_owner(keel_stream stream);
    void let_go(StreamPool& pool) noexcept;

    // Declares that `block` is used on `stream`: the free will wait for
    // whatever `stream` has enqueued by then. No plugin call. No-op for the
    // block's own stream.
    // `generation`: the stream's (what register_stream returned), when the
    // caller knows it; else it is looked up in the process-wide registry.
    [[nodiscard]] Result<void> record_use(const Block* block, keel_stream stream,
                                          std::vector<RecordedUse>& uses,
                                          std::optional<StreamGeneration> generation = std::nullopt);

    // Checked mode: OK unless [addr, addr + size) touches this allocator's
    // memory outside one live buffer (CheckedBlocks::check_view). Always OK
    // otherwise.
    [[nodiscard]] Result<void> check_view(const char* where, const char* role, keel_device_addr addr,
                                          std::uint64_t size) const;
    [[nodiscard]] bool checked() const noexcept { return checked_ != nullptr; }
    [[nodiscard]] bool caching() const noexcept { return caching_; }

    [[nodiscard]] static keel_device_addr address(const Block* block) noexcept;
    [[nodiscard]] static std::uint64_t size(const Block* block) noexcept;  // rounded size
    [[nodiscard]] static keel_stream stream(const Block* block) noexcept;

    // Non-blocking: releases pending frees (and all other tracked work) that
    // completed.
    void sweep() noexcept { (void)tracker_.sweep(); }
    // Blocks until every pending free completed and its block is reusable.
    void wait_pending() noexcept;
    // Returns every entirely free segment to the plugin.
    [[nodiscard]] Result<void> release_cached();
    // `stream` closed (after its work, before the plugin destroys it): the
    // free segments of its pools go back to the plugin, and its segments
    // that still hold live buffers move to the leftovers pool, which every
    // stream reads before it reserves a new segment. A block that comes back
    // to a closed stream's pool later (a pending free settling, a block
    // leaving the quarantine) does the same, so no pool that no stream reads
    // keeps free memory: streams coming and going while some of their
    // buffers live on keep reserved memory within a small multiple of what
    // is alive.
    void stream_closed(keel_stream stream) noexcept;

    [[nodiscard]] AllocatorStats stats() const;
    // Bytes obtained from the plugin and not yet returned (no lock).
    [[nodiscard]] std::uint64_t reserved_bytes() const noexcept {
        return reserved_bytes_.load(std::memory_order_relaxed);
    }
    void reset_peaks() noexcept;
    [[nodiscard]] MemorySnapshot snapshot() const;
    [[nodiscard]] std::uint64_t round_size(std::uint64_t size) const noexcept;

private:
    StreamPool& pool_for(keel_stream stream, bool small);
    StreamPool& shard_pool(keel_stream stream, std::uint32_t shard);
    void flush_credit(StreamPool& pool) noexcept;
    std::vector<StreamPool*> all_pools() const;
    Block* try_take(StreamPool& pool, std::uint64_t rounded, std::uint64_t requested);
    Result<Block*> allocate_slow(StreamPool& pool, std::uint64_t rounded, std::uint64_t requested);
    Result<keel_device_addr> raw_alloc(std::uint64_t size);
    Block* adopt_segment(StreamPool& pool, keel_device_addr addr, std::uint64_t seg_size,
                         std::uint64_t rounded, std::uint64_t requested);
    bool claim_pending_with_device_wait(StreamPool& pool, std::uint64_t rounded);
    Result<Block*> handed_out(Result<Block*> block, keel_stream stream, std::uint64_t requested);
    // Records the free-time event of each use; drops the uses of closed streams.
    void record_at_free(std::vector<RecordedUse>& uses) noexcept;
    // free() without giving back the block's share of the owner; returns the
    // pool that counts that share (the segment's pool at the free).
    StreamPool& release_block(Block* block, std::vector<RecordedUse> uses) noexcept;
    StreamPool& free_checked(Block* block, std::vector<RecordedUse> uses) noexcept;
    StreamPool& free_uncached(Block* block, std::vector<RecordedUse> uses) noexcept;
    // Waits until the work enqueued so far on the pool's stream ran: what
    // a segment of the pool needs before it goes back to the plugin. At
    // once when that stream was closed (closing waited for its work).
    void wait_for_stream(const StreamPool& pool) noexcept;
    // Blocks back from quarantine go to their pools' free trees.
    void return_blocks(const std::vector<Block*>& blocks) noexcept;
    void free_segments(const std::vector<ReleasedSegment>& segments, Result<void>* result) noexcept;
    // A closed stream's pool (or the leftovers pool) got memory back: its
    // entirely free segments go back to the plugin, and, while no newer
    // stream on the handle allocated from it, its other segments move to
    // the leftovers pool (block_allocator_closed.cpp).
    void release_closed(StreamPool& pool) noexcept;
    void move_to_leftovers(StreamPool& pool) noexcept;
    // Before a new segment: a leftover segment with a free block of at least
    // `rounded` bytes moves to `pool`, which allocates from it.
    Block* take_leftover(StreamPool& pool, std::uint64_t rounded, std::uint64_t requested);
    // After a pending free settled: a closed pool gives its memory back.
    void settled_in(StreamPool& pool) noexcept;
    void on_use_complete(const std::shared_ptr<PendingFree>& pending) noexcept;
    // Under pool.mu: the pending block goes back to the free tree.
    void settle_locked(StreamPool& pool, PendingFree& pending);
    void wait_and_settle(const std::shared_ptr<PendingFree>& pending) noexcept;
    void enforce_pending_bounds() noexcept;
    void maybe_sweep() noexcept;
    void count_allocated(std::uint64_t bytes) noexcept;
    Error out_of_memory(keel_stream stream, std::uint64_t requested, std::uint64_t rounded,
                        const Error& cause);

    DeviceOps& ops_;
    EventPool& events_;
    CompletionTracker& tracker_;
    const AllocatorConfig config_;
    std::unique_ptr<const SizePolicy> policy_;
    std::uint64_t max_pending_bytes_;
    std::uint32_t max_pending_count_;
    const std::uint64_t id_;  // distinguishes allocators in the thread-local pool cache
    const bool caching_;
    std::unique_ptr<CheckedBlocks> checked_;  // checked mode only

    mutable std::shared_mutex pools_mu_;
    // Pools live as long as the allocator (a stream handle that is reused by
    // a new stream finds its old pool, which is safe: the old stream's work
    // finished before it was destroyed).
    std::unordered_map<keel_stream, std::unique_ptr<StreamShards>> pools_;
    std::weak_ptr<void> owner_;  // guarded by pools_mu_, as is:
    bool orphaned_ = false;
    // What closed streams left: segments that still hold live blocks (no
    // stream's work uses their free blocks any more). Its stream is null and
    // it is always closed. Every stream takes a segment from it before it
    // reserves a new one; its segments go back to the plugin as they empty.
    const std::unique_ptr<StreamPool> leftovers_;
    // Taken first by whatever moves a segment between pools, which then
    // locks the pool it moves from before the pool it moves to.
    std::mutex move_mu_;

    // Read by every allocation, written only by cross-stream frees: a line
    // of its own, apart from the counters below and the fields above.
    alignas(64) std::atomic<std::uint64_t> pending_count_{0};
    // Allocated bytes for the peaks: exact but for what pools hold back as
    // credit (block_allocator.cpp). stats() sums the pools' exact counts.
    alignas(64) std::atomic<std::uint64_t> allocated_bytes_{0};
    std::atomic<std::uint64_t> reserved_bytes_{0};
    std::atomic<std::uint64_t> pending_bytes_{0};
    std::atomic<std::uint64_t> peak_allocated_{0};
    std::atomic<std::uint64_t> peak_reserved_{0};
    std::atomic<std::uint64_t> peak_pending_{0};
    std::atomic<std::uint64_t> peak_in_use_{0};
    std::atomic<std::uint64_t> raw_allocs_{0};
    std::atomic<std::uint64_t> raw_frees_{0};
    std::atomic<std::uint64_t> oom_retries_{0};
    std::atomic<std::uint64_t> ooms_{0};
    std::atomic<std::uint64_t> reuse_waits_{0};
    std::atomic<std::uint64_t> pending_free_waits_{0};
    std::atomic<std::uint64_t> free_order_{0};
};

}  // namespace keel::memory
