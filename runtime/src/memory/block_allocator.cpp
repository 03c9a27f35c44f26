#include "memory/block_allocator.hpp"

#include "trace/hooks.hpp"

#include <keel/format.hpp>

#include "host_func_guard.hpp"
#include "logging.hpp"
#include "memory/block_pool.hpp"
#include "memory/event_wait.hpp"
#include "memory/peak.hpp"
#include "memory/thread_shard.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <thread>
#include <utility>

namespace keel::memory {

namespace {

std::atomic<std::uint64_t> g_next_allocator_id{1};

// The pools of the stream this thread used last, so that the common case of
// one stream per thread finds them without touching the shared map. Small
// requests of a stream go to the pool of the calling thread's shard
// (memory/thread_shard.hpp), so that up to shard_count() threads allocating
// on one stream each have a pool (its own lock, trees and cache lines) to
// themselves; a block freed by another thread goes back to its own pool.
struct PoolCache {
    std::uint64_t allocator_id = 0;
    keel_stream stream = nullptr;
    StreamPool* large = nullptr;  // shard 0
    StreamPool* small = nullptr;  // this thread's shard
};
thread_local PoolCache t_pool_cache;

// Freed bytes a pool may hold back from the shared allocated counter: its
// next allocations take them first, so freeing a block and allocating one
// of the same size again (the common case) writes no cache line shared with
// other threads. Peaks read from the shared counter can exceed the true
// high-water mark by at most this much per pool other than the allocating
// one; with a single pool they are exact.
constexpr std::uint64_t kCreditBytes = 2 * MiB;

// Opportunistic sweeping on the fast path, per thread: sweep on every
// operation while sweeps keep releasing something (work is completing, so
// memory should come back now), back off exponentially up to sweep_every
// operations while they find nothing (the device is behind; queries would
// be wasted).
struct SweepPacing {
    std::uint32_t skip = 0;
    std::uint32_t backoff = 1;
};
thread_local SweepPacing t_sweep;

std::uint64_t pow2_at_least(std::uint64_t v) noexcept {
    return std::bit_ceil(std::max<std::uint64_t>(v, 1));
}

std::string stream_name(keel_stream s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", static_cast<void*>(s));
    return buf;
}

constexpr std::uint64_t kMaxRequest = std::uint64_t{1} << 62;

}  // namespace

alignas(64) std::atomic<bool> g_checked_memory_anywhere{false};

BlockAllocator::BlockAllocator(DeviceOps& ops, EventPool& events, CompletionTracker& tracker,
                               const AllocatorConfig& config, const BackPressureConfig& limits)
    : ops_(ops),
      events_(events),
      tracker_(tracker),
      config_(config),
      max_pending_count_(limits.max_pending_free_count),
      id_(g_next_allocator_id.fetch_add(1)),
      caching_(config.caching),
      leftovers_(std::make_unique<StreamPool>(nullptr, 0)) {
    leftovers_->closed = true;
    if (config.checked) {
        checked_ = std::make_unique<CheckedBlocks>(ops, events, caching_ ? config.quarantine_bytes : 0);
        g_checked_memory_anywhere.store(true, std::memory_order_relaxed);
    }
    auto policy = std::make_unique<SizePolicy>();
    policy->quantum = pow2_at_least(std::max(config.rounding, ops.alloc_alignment()));
    policy->quantum_shift = static_cast<unsigned>(std::countr_zero(policy->quantum));
    policy->small_limit = policy->round(config.small_size_limit);
    policy->small_segment = policy->round(std::max(config.small_segment_size, policy->small_limit));
    policy->large_rounding = pow2_at_least(std::max(config.large_rounding, policy->quantum));
    policy->large_segment = policy->round(std::max(config.large_segment_size, policy->small_limit * 2));
    policy->park_depth = std::min<std::uint32_t>(config.exact_cache_depth, 255);
    policy->park_bytes = config.exact_cache_bytes;
    policy->large_park_bytes = config.exact_cache_large_bytes;
    policy_ = std::move(policy);
    max_pending_bytes_ = limits.max_pending_free_bytes;
    if (max_pending_bytes_ == 0) {
        const std::uint64_t total = ops.total_memory();
        max_pending_bytes_ = total != 0 ? total / 8 : 64 * MiB;
    }
    if (max_pending_count_ == 0) max_pending_count_ = std::numeric_limits<std::uint32_t>::max();
}

BlockAllocator::~BlockAllocator() {
    if (checked_) return_blocks(checked_->drain());
    std::uint64_t leaked = 0;
    for (StreamPool* pool : all_pools()) {
        std::vector<ReleasedSegment> segments;
        {
            std::lock_guard lock(pool->mu);
            collect_free_segments(*pool, segments);
            leaked += pool->segment_count;
        }
        for (const ReleasedSegment& s : segments) {
            auto r = ops_.device_free(s.addr);
            if (!r.ok()) detail::log_warn("[BlockAllocator] " + r.error().message());
        }
    }
    if (leaked != 0)
        detail::log_warn("[BlockAllocator] destroyed while " + std::to_string(leaked) +
                         " segment(s) still hold live buffers; they are leaked");
    // Pools hold the pending-free records only while blocks are pending; a
    // live PendingFree here means the tracker was not drained (a bug).
}

std::uint64_t BlockAllocator::round_size(std::uint64_t size) const noexcept {
    return policy_->round(size);
}

keel_device_addr BlockAllocator::address(const Block* block) noexcept { return block->addr; }
std::uint64_t BlockAllocator::size(const Block* block) noexcept { return block->size; }
keel_stream BlockAllocator::stream(const Block* block) noexcept {
    return pool_of(*block->segment)->stream;
}

StreamPool& BlockAllocator::shard_pool(keel_stream stream, std::uint32_t shard) {
    {
        std::shared_lock lock(pools_mu_);
        auto it = pools_.find(stream);
        if (it != pools_.end() && it->second->shard[shard]) return *it->second->shard[shard];
    }
    std::unique_lock lock(pools_mu_);
    auto& shards = pools_[stream];
    if (!shards) shards = std::make_unique<StreamShards>();
    auto& pool = shards->shard[shard];
    if (!pool) {
        pool = std::make_unique<StreamPool>(stream, shard);
        pool->orphaned = orphaned_;
        if (!orphaned_) pool->owner = owner_.lock();
    }
    return *pool;
}

StreamPool& BlockAllocator::pool_for(keel_stream stream, bool small) {
    PoolCache& cache = t_pool_cache;
    if (cache.allocator_id != id_ || cache.stream != stream) {
        const std::uint32_t shard = thread_shard();
        StreamPool& large = shard_pool(stream, 0);
        cache = PoolCache{id_, stream, &large, shard == 0 ? &large : &shard_pool(stream, shard)};
    }
    return small ? *cache.small : *cache.large;
}

std::vector<StreamPool*> BlockAllocator::all_pools() const {
    std::shared_lock lock(pools_mu_);
    std::vector<StreamPool*> out;
    out.reserve(pools_.size());
    for (const auto& [stream, shards] : pools_)
        for (const auto& pool : shards->shard)
            if (pool) out.push_back(pool.get());
    out.push_back(leftovers_.get());
    return out;
}

void BlockAllocator::flush_credit(StreamPool& pool) noexcept {
    std::uint64_t credit = 0;
    {
        std::lock_guard lock(pool.mu);
        credit = std::exchange(pool.credit, 0);
    }
    if (credit != 0) allocated_bytes_.fetch_sub(credit, std::memory_order_relaxed);
}

void BlockAllocator::count_allocated(std::uint64_t bytes) noexcept {
    const std::uint64_t now = allocated_bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    update_peak(peak_allocated_, now);
    update_peak(peak_in_use_, now + pending_bytes_.load(std::memory_order_relaxed));
}

void BlockAllocator::maybe_sweep() noexcept {
    if (tracker_.idle()) return;
    SweepPacing& pace = t_sweep;
    if (pace.skip > 0) {
        --pace.skip;
        return;
    }
    if (tracker_.sweep() > 0)
        pace.backoff = 1;
    else
        pace.backoff = std::min<std::uint32_t>(pace.backoff * 2, std::max<std::uint32_t>(config_.sweep_every, 1));
    pace.skip = pace.backoff - 1;
}

namespace {

// Under pool.mu: counts an allocation of `block` in the pool; returns the
// bytes the shared counter must grow by (what the pool's credit does not cover).
std::uint64_t count_in_pool(StreamPool& pool, const Block* block, std::uint64_t requested) noexcept {
    // An allocation comes through a handle of the owner, so the pool holds
    // its reference (adopt() gave it back when the handles came back).
    assert(!pool.orphaned);
    ++pool.allocations;
    ++pool.allocated_count;
    pool.closed = false;  // a stream on the handle allocates from it again
    ++pool.owners;
    pool.requested_bytes += requested;
    pool.allocated_bytes += block->size;
    const std::uint64_t covered = std::min(pool.credit, block->size);
    pool.credit -= covered;
    return block->size - covered;
}

}  // namespace

Block* BlockAllocator::try_take(StreamPool& pool, std::uint64_t rounded, std::uint64_t requested) {
    Block* block = nullptr;
    std::uint64_t grow = 0;
    {
        std::lock_guard lock(pool.mu);
        block = take_parked(pool, *policy_, rounded, requested);
        if (block == nullptr) block = take_free_block(pool, *policy_, rounded, requested);
        if (block == nullptr) return nullptr;
        ++pool.cache_hits;
        grow = count_in_pool(pool, block, requested);
    }
    if (grow != 0) count_allocated(grow);
    return block;
}

Result<Block*> BlockAllocator::allocate(keel_stream stream, std::uint64_t size) {
    if (stream == nullptr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[BlockAllocator::allocate] stream is null");
    if (size == 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[BlockAllocator::allocate] size is 0");
    if (size > kMaxRequest)
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[BlockAllocator::allocate] " +
                                                    std::to_string(size) + " bytes is too large");
    if (checked_) [[unlikely]] {
        if (std::optional<Error> finding = checked_->finding()) return *std::move(finding);
    }
    const std::uint64_t rounded = policy_->round(checked_ ? size + CheckedBlocks::kGuardBytes : size);
    StreamPool& pool = pool_for(stream, policy_->is_small(rounded));
    if (!caching_) [[unlikely]] {
        auto raw = raw_alloc(rounded);
        if (!raw.ok()) return out_of_memory(stream, size, rounded, raw.error());
        return handed_out(adopt_segment(pool, *raw, rounded, rounded, size), stream, size);
    }
    // While cross-stream frees are pending, every allocation first returns
    // the completed ones (as PyTorch's allocator processes its events on
    // every malloc): memory not reusable tracks the oracle that frees exactly
    // when the last use completes. Otherwise the paced sweep. (Settling:
    // a completed free the reclaimer thread is releasing right now must not
    // count as in use when this allocation raises the peak.)
    if (pending_count_.load(std::memory_order_relaxed) != 0)
        (void)tracker_.sweep_and_settle();
    else
        maybe_sweep();
    if (Block* block = try_take(pool, rounded, size)) {
        if (trace::on()) [[unlikely]] trace::note_cache_hit(true);
        return handed_out(block, stream, size);
    }
    if (trace::on()) [[unlikely]] trace::note_cache_hit(false);
    return handed_out(allocate_slow(pool, rounded, size), stream, size);
}

Result<Block*> BlockAllocator::handed_out(Result<Block*> block, keel_stream stream, std::uint64_t requested) {
    if (checked_ && block.ok()) [[unlikely]]
        checked_->on_allocate(stream, (*block)->addr, requested, (*block)->size);
    return block;
}

Result<keel_device_addr> BlockAllocator::raw_alloc(std::uint64_t size) {
    // Reserve first so concurrent raw allocations cannot overshoot the limit.
    const std::uint64_t after = reserved_bytes_.fetch_add(size, std::memory_order_relaxed) + size;
    if (config_.reserved_limit != 0 && after > config_.reserved_limit) {
        reserved_bytes_.fetch_sub(size, std::memory_order_relaxed);
        return Error(KEEL_STATUS_OUT_OF_MEMORY,
                     "reserved limit of " + format_bytes(config_.reserved_limit) + " reached");
    }
    auto addr = ops_.device_alloc(size);
    if (!addr.ok()) {
        reserved_bytes_.fetch_sub(size, std::memory_order_relaxed);
        return std::move(addr).error();
    }
    raw_allocs_.fetch_add(1, std::memory_order_relaxed);
    update_peak(peak_reserved_, after);
    return *addr;
}

Block* BlockAllocator::adopt_segment(StreamPool& pool, keel_device_addr addr, std::uint64_t seg_size,
                                     std::uint64_t rounded, std::uint64_t requested) {
    Block* block = nullptr;
    std::uint64_t grow = 0;
    {
        std::lock_guard lock(pool.mu);
        block = carve_new_segment(pool, *policy_, addr, seg_size, rounded, requested);
        if (checked_) checked_->add_segment(addr, seg_size);
        grow = count_in_pool(pool, block, requested);
    }
    if (grow != 0) count_allocated(grow);
    return block;
}

Block* BlockAllocator::take_leftover(StreamPool& pool, std::uint64_t rounded, std::uint64_t requested) {
    Block* block = nullptr;
    std::uint64_t grow = 0;
    std::shared_ptr<void> last;  // dropped after the locks (never the last: `pool` holds one)
    {
        std::lock_guard moving(move_mu_);
        StreamPool& from = *leftovers_;
        std::lock_guard from_lock(from.mu);
        unpark_all(from);  // a leftover freed here may have been parked
        FreeTree& tree = policy_->is_small(rounded) ? from.small_free : from.large_free;
        Segment* found = nullptr;
        // Best fit among the first few that may move (a segment with a
        // pending block stays until it settles).
        int looked = 0;
        for (auto it = tree.lower_bound(rounded, SizeKey{}); it != tree.end() && looked < 8; ++it, ++looked)
            if (movable(*it->segment)) {
                found = it->segment;
                break;
            }
        if (found == nullptr) return nullptr;
        std::lock_guard to_lock(pool.mu);
        move_owner_shares(from, pool, move_segment(from, pool, *found), last);
        block = take_free_block(pool, *policy_, rounded, requested);
        assert(block != nullptr);  // the segment brought one
        ++pool.cache_hits;
        grow = count_in_pool(pool, block, requested);
    }
    if (grow != 0) count_allocated(grow);
    return block;
}

Result<Block*> BlockAllocator::allocate_slow(StreamPool& pool, std::uint64_t rounded,
                                             std::uint64_t requested) {
    // 1. Completed pending frees come back without blocking, and parked
    // blocks are merged so that they can serve other sizes.
    tracker_.sweep();
    {
        std::lock_guard lock(pool.mu);
        unpark_all(pool);
        pool.closed = false;  // a new stream on the handle: cache for it
    }
    if (Block* block = try_take(pool, rounded, requested)) return block;
    // What closed streams left beside their live blocks, before new memory.
    if (caching_) {
        if (Block* block = take_leftover(pool, rounded, requested)) return block;
    }
    // Optionally reuse a pending block of this stream by ordering the stream
    // after its other-stream uses on the device.
    if (config_.wait_at_reuse && claim_pending_with_device_wait(pool, rounded)) {
        if (Block* block = try_take(pool, rounded, requested)) return block;
    }
    std::uint64_t seg_size = policy_->segment_size(rounded);
    auto raw = raw_alloc(seg_size);
    if (!raw.ok() && raw.error().code() == KEEL_STATUS_OUT_OF_MEMORY && seg_size > rounded) {
        // A whole segment does not fit (a small device): the exact size may.
        seg_size = rounded;
        raw = raw_alloc(seg_size);
    }
    if (raw.ok()) return adopt_segment(pool, *raw, seg_size, rounded, requested);
    if (raw.error().code() != KEEL_STATUS_OUT_OF_MEMORY)
        return std::move(raw).error().context("CachingAllocator::allocate");

    // The out-of-memory ladder.
    oom_retries_.fetch_add(1, std::memory_order_relaxed);
    // 2. Wait for every pending free (of every stream) to complete, and
    // empty the quarantine.
    wait_pending();
    if (checked_) return_blocks(checked_->drain());
    if (Block* block = try_take(pool, rounded, requested)) return block;
    // 3. Give every stream's entirely free segments back to the plugin.
    auto released = release_cached();
    if (!released.ok()) detail::log_warn(released.error().message());
    // 4. Retry once (at the exact size if a whole segment did not fit).
    raw = raw_alloc(seg_size);
    if (raw.ok()) return adopt_segment(pool, *raw, seg_size, rounded, requested);
    ooms_.fetch_add(1, std::memory_order_relaxed);
    return out_of_memory(pool.stream, requested, rounded, raw.error());
}

Error BlockAllocator::out_of_memory(keel_stream stream, std::uint64_t requested,
                                    std::uint64_t rounded, const Error& cause) {
    return Error(cause.code(), "[BlockAllocator::allocate] cannot allocate " +
                                   format_bytes(requested) + " (" + std::to_string(requested) +
                                   " bytes, rounded to " + std::to_string(rounded) +
                                   ") on stream " + stream_name(stream) +
                                   " after sweeping, waiting for pending frees and releasing "
                                   "cached memory: " +
                                   cause.message() + "; allocator: " + stats().to_string());
}

bool BlockAllocator::claim_pending_with_device_wait(StreamPool& pool, std::uint64_t rounded) {
    std::shared_ptr<PendingFree> claimed;
    {
        std::lock_guard lock(pool.mu);
        const bool small = policy_->is_small(rounded);
        for (const auto& p : pool.pending) {
            if (p->settled || p->block->size < rounded || p->block->segment->small != small) continue;
            if (!claimed || p->block->size < claimed->block->size) claimed = p;
        }
        if (!claimed) return false;
        // Reserved for us: sweeps will not return it while we enqueue waits.
        claimed->settled = true;
        auto& pending = pool.pending;
        pending.erase(std::find(pending.begin(), pending.end(), claimed));
    }
    for (const RecordedUse& use : claimed->uses) {
        auto waited = ops_.stream_wait_event(pool.stream, use.event);
        if (!waited.ok()) {
            // Could not order on the device: wait on the host instead.
            auto synced = wait_for_event(ops_, use.event);
            if (!synced.ok()) detail::log_debug("[BlockAllocator] " + synced.error().message());
        }
        reuse_waits_.fetch_add(1, std::memory_order_relaxed);
    }
    const std::uint64_t bytes = claimed->block->size;
    {
        std::lock_guard lock(pool.mu);
        return_block(pool, claimed->block);  // may merge: the block pointer is dead after this
    }
    pending_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    pending_count_.fetch_sub(1, std::memory_order_relaxed);
    return true;
}

void BlockAllocator::record_at_free(std::vector<RecordedUse>& uses) noexcept {
    std::erase_if(uses, [&](RecordedUse& use) {
        const OpenStream open = keep_open(use.stream, use.generation, Match::exact);
        if (!open) return true;  // closing waited for its work
        auto event = events_.acquire();
        if (event.ok()) {
            if (ops_.event_record(*event, use.stream).ok()) {
                use.event = *event;
                use.seq = tracker_.next_seq(use.stream);
                return false;
            }
            events_.release(*event);
        }
        // No event: wait for the stream here (a failed stream never touches memory again).
        auto synced = ops_.stream_synchronize(use.stream);
        if (!synced.ok()) detail::log_debug("[BlockAllocator::free] " + synced.error().message());
        return true;
    });
}

void BlockAllocator::return_blocks(const std::vector<Block*>& blocks) noexcept {
    for (Block* b : blocks) {
        StreamPool& pool = lock_pool_of(b);
        bool closed = false;
        {
            std::lock_guard lock(pool.mu, std::adopt_lock);
            b->held_back = false;
            return_block(pool, b);
            closed = pool.closed;
        }
        // A block leaving the quarantine after its stream closed: nothing
        // allocates from that pool any more, so its free segments go back
        // to the plugin now (else every replaced stream keeps its segments).
        if (closed) [[unlikely]] release_closed(pool);
    }
}

StreamPool& BlockAllocator::free_checked(Block* block, std::vector<RecordedUse> uses) noexcept {
    keel_stream stream = nullptr;
    StreamGeneration opened_as = 0;
    {
        StreamPool& seen = lock_pool_of(block);
        std::lock_guard lock(seen.mu, std::adopt_lock);
        stream = seen.stream;
        opened_as = seen.opened_as;
    }
    // The owner may be closed (a buffer may outlive its stream; a leftover
    // segment has no stream): then its work is done, uses are waited for
    // here and the block is quarantined without the guard check and poison,
    // which would run on that stream. (Only a closed stream's segment moves,
    // so an owner seen open stays the block's while it is kept open.)
    const OpenStream owner =
        stream != nullptr ? keep_open(stream, opened_as, Match::or_newer) : OpenStream{};
    // Other streams' uses are ordered before the owner on the device, so the
    // poison, and every later owner, runs after them.
    for (const RecordedUse& use : uses) {
        if (!owner || !ops_.stream_wait_event(stream, use.event).ok())
            (void)wait_for_event(ops_, use.event);
        events_.release(use.event);
    }
    const keel_device_addr addr = block->addr;
    const std::uint64_t bytes = block->size;
    std::uint64_t requested = 0;
    StreamPool& pool = lock_pool_of(block);
    {
        std::lock_guard lock(pool.mu, std::adopt_lock);
        requested = block->requested;
        --pool.allocated_count;
        pool.requested_bytes -= requested;
        pool.allocated_bytes -= bytes;
        block->held_back = true;
    }
    allocated_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    return_blocks(checked_->retire(block, owner ? stream : nullptr, addr, requested, bytes));
    return pool;
}

StreamPool& BlockAllocator::free_uncached(Block* block, std::vector<RecordedUse> uses) noexcept {
    // Without caching no segment moves: the pool is the block's for good.
    StreamPool& pool = *pool_of(*block->segment);
    // As a device free without a cache: the memory goes back once its
    // stream and every recorded use are done.
    for (const RecordedUse& use : uses) {
        (void)wait_for_event(ops_, use.event);
        events_.release(use.event);
    }
    wait_for_stream(pool);
    if (checked_) checked_->forget(block->addr);
    const std::uint64_t bytes = block->size;
    std::vector<ReleasedSegment> segments;
    {
        std::lock_guard lock(pool.mu);
        --pool.allocated_count;
        pool.requested_bytes -= block->requested;
        pool.allocated_bytes -= bytes;
        return_block(pool, block);
        try {
            collect_free_segments(pool, segments);
        } catch (...) {
            // No host memory for the list: the segment stays cached.
        }
    }
    allocated_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    free_segments(segments, nullptr);
    return pool;
}

void BlockAllocator::free(Block* block, std::vector<RecordedUse> uses) noexcept {
    if (block == nullptr) return;
    if (!uses.empty() || !caching_ || checked_) [[unlikely]] {
        StreamPool& counted = release_block(block, std::move(uses));
        let_go(counted);  // last: the owner may go with it
        return;
    }
    // The common case in one section of the pool's lock, which also gives
    // back the block's share of the owner: nothing here may touch the
    // allocator after it, so the sweep comes first and the reference that
    // may be the owner's last is dropped after the lock.
    maybe_sweep();
    std::shared_ptr<void> last;
    bool closed = false;
    StreamPool& pool = lock_pool_of(block);
    {
        std::lock_guard lock(pool.mu, std::adopt_lock);
        const std::uint64_t bytes = block->size;
        --pool.allocated_count;
        pool.requested_bytes -= block->requested;
        pool.allocated_bytes -= bytes;
        pool.credit += bytes;
        if (pool.credit > kCreditBytes)
            allocated_bytes_.fetch_sub(std::exchange(pool.credit, 0), std::memory_order_relaxed);
        if (!park(pool, *policy_, block)) return_block(pool, block);
        closed = pool.closed;
        if (!closed && --pool.owners == 0 && pool.orphaned) last = std::move(pool.owner);
    }
    if (closed) [[unlikely]] {
        // The closed stream's segments go back to the plugin or to the
        // leftovers, before the block's share of the owner (which may be its
        // last) is dropped.
        flush_credit(pool);
        release_closed(pool);
        let_go(pool);
    }
}

StreamPool& BlockAllocator::share_owner(keel_stream stream) {
    StreamPool& pool = pool_for(stream, /*small=*/true);
    std::lock_guard lock(pool.mu);
    assert(!pool.orphaned);  // the caller holds a handle
    ++pool.owners;
    return pool;
}

// A block of `pool`, or another share of the owner, is no longer out.
void BlockAllocator::let_go(StreamPool& pool) noexcept {
    std::shared_ptr<void> last;  // dropped after the lock
    std::lock_guard lock(pool.mu);
    if (--pool.owners == 0 && pool.orphaned) last = std::move(pool.owner);
}

void BlockAllocator::set_owner(const std::shared_ptr<void>& owner) {
    std::unique_lock lock(pools_mu_);
    owner_ = owner;
    std::lock_guard pool_lock(leftovers_->mu);
    leftovers_->owner = owner;
}

void BlockAllocator::orphan() noexcept {
    // Under the map's lock no pool is created meanwhile; under each pool's
    // lock its count is exact. Dropping a pool's reference here is never
    // the last one: the caller still holds one.
    std::unique_lock lock(pools_mu_);
    orphaned_ = true;
    auto orphan_pool = [](StreamPool& pool) {
        std::lock_guard pool_lock(pool.mu);
        pool.orphaned = true;
        if (pool.owners == 0) pool.owner.reset();
    };
    for (const auto& [stream, shards] : pools_)
        for (const auto& pool : shards->shard)
            if (pool) orphan_pool(*pool);
    orphan_pool(*leftovers_);
}

void BlockAllocator::adopt(const std::shared_ptr<void>& owner) noexcept {
    std::unique_lock lock(pools_mu_);
    orphaned_ = false;
    auto adopt_pool = [&owner](StreamPool& pool) {
        std::lock_guard pool_lock(pool.mu);
        pool.orphaned = false;
        if (!pool.owner) pool.owner = owner;
    };
    for (const auto& [stream, shards] : pools_)
        for (const auto& pool : shards->shard)
            if (pool) adopt_pool(*pool);
    adopt_pool(*leftovers_);
}

StreamPool& BlockAllocator::release_block(Block* block, std::vector<RecordedUse> uses) noexcept {
    if (!uses.empty() && detail::in_host_func()) [[unlikely]] {
        // No plugin call is allowed here, so no event: keeping the block is
        // the only safe choice.
        detail::log_error("[Buffer] a buffer declared with record_stream was freed inside a host function, "
                          "where no event can be recorded: its " + std::to_string(block->size) +
                          " bytes are kept out of the cache (leaked); drop such buffers outside host functions");
        StreamPool& pool = lock_pool_of(block);
        std::lock_guard lock(pool.mu, std::adopt_lock);
        block->held_back = true;
        return pool;
    }
    record_at_free(uses);
    if (!caching_) [[unlikely]]
        return free_uncached(block, std::move(uses));
    if (checked_) [[unlikely]]
        return free_checked(block, std::move(uses));
    const std::uint64_t bytes = block->size;
    if (uses.empty()) {
        // Every recorded stream was closed: a free without uses.
        bool closed = false;
        StreamPool& pool = lock_pool_of(block);
        {
            std::lock_guard lock(pool.mu, std::adopt_lock);
            --pool.allocated_count;
            pool.requested_bytes -= block->requested;
            pool.allocated_bytes -= bytes;
            allocated_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
            if (!park(pool, *policy_, block)) return_block(pool, block);
            closed = pool.closed;
        }
        if (closed) [[unlikely]] release_closed(pool);
        return pool;
    }
    std::shared_ptr<PendingFree> pending;
    try {
        pending = std::make_shared<PendingFree>(block, nullptr, &events_, std::move(uses),
                                                free_order_.fetch_add(1, std::memory_order_relaxed));
    } catch (...) {
        // No host memory for the record: wait for the uses here instead.
        for (const RecordedUse& use : uses) {
            (void)wait_for_event(ops_, use.event);
            events_.release(use.event);
        }
        uses.clear();
        return release_block(block, {});
    }
    // A segment with a pending block does not move, so the pool stays the
    // block's until the pending free settles.
    StreamPool& pool = lock_pool_of(block);
    {
        std::lock_guard lock(pool.mu, std::adopt_lock);
        pending->pool = &pool;
        block->state = BlockState::pending;
        --pool.allocated_count;
        pool.requested_bytes -= block->requested;
        pool.allocated_bytes -= bytes;
        block->requested = 0;
        try {
            pool.pending.push_back(pending);
        } catch (...) {
            pending->settled = true;  // handled below by waiting
        }
    }
    allocated_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    const std::uint64_t now_pending = pending_bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    pending_count_.fetch_add(1, std::memory_order_relaxed);
    update_peak(peak_pending_, now_pending);
    if (pending->settled) {
        // Could not file it: settle synchronously.
        for (const RecordedUse& use : pending->uses) (void)wait_for_event(ops_, use.event);
        std::lock_guard lock(pool.mu);
        return_block(pool, block);
        pending_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
        pending_count_.fetch_sub(1, std::memory_order_relaxed);
        return pool;
    }
    for (const RecordedUse& use : pending->uses) {
        try {
            tracker_.track(use.stream, use.seq, use.event, /*owns_event=*/false,
                           WorkKind::pending_free,
                           HostFunc([this, pending] { on_use_complete(pending); }));
        } catch (...) {
            wait_and_settle(pending);
        }
    }
    enforce_pending_bounds();
    return pool;
}

void BlockAllocator::settle_locked(StreamPool& pool, PendingFree& pending) {
    pending.settled = true;
    auto it = std::find_if(pool.pending.begin(), pool.pending.end(),
                           [&](const auto& p) { return p.get() == &pending; });
    if (it != pool.pending.end()) pool.pending.erase(it);
    const std::uint64_t bytes = pending.block->size;
    // The pool's generation names the track: no lookup under the pool's lock.
    if (trace::on()) [[unlikely]]
        trace::free_settled(pool.opened_as, bytes, address(pending.block));
    return_block(pool, pending.block);  // may merge: the block pointer is dead after this
    pending_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    pending_count_.fetch_sub(1, std::memory_order_relaxed);
}

void BlockAllocator::on_use_complete(const std::shared_ptr<PendingFree>& pending) noexcept {
    StreamPool& pool = *pending->pool;
    bool closed = false;
    {
        std::lock_guard lock(pool.mu);
        if (--pending->remaining != 0 || pending->settled) return;
        settle_locked(pool, *pending);
        closed = pool.closed;
    }
    if (closed) release_closed(pool);
}

void BlockAllocator::wait_and_settle(const std::shared_ptr<PendingFree>& pending) noexcept {
    for (const RecordedUse& use : pending->uses) {
        auto r = wait_for_event(ops_, use.event);
        if (!r.ok()) detail::log_debug("[BlockAllocator] " + r.error().message());
    }
    StreamPool& pool = *pending->pool;
    bool closed = false;
    {
        std::lock_guard lock(pool.mu);
        if (pending->settled) return;
        settle_locked(pool, *pending);
        closed = pool.closed;
    }
    if (closed) release_closed(pool);
}

void BlockAllocator::wait_pending() noexcept {
    std::vector<std::shared_ptr<PendingFree>> all;
    try {
        for (StreamPool* pool : all_pools()) {
            std::lock_guard lock(pool->mu);
            all.insert(all.end(), pool->pending.begin(), pool->pending.end());
        }
    } catch (...) {
        detail::log_warn("[BlockAllocator::wait_pending] out of host memory");
    }
    for (const auto& p : all) wait_and_settle(p);
}

void BlockAllocator::enforce_pending_bounds() noexcept {
    while (pending_bytes_.load(std::memory_order_relaxed) > max_pending_bytes_ ||
           pending_count_.load(std::memory_order_relaxed) > max_pending_count_) {
        // The oldest pending free of any stream: the work most likely done.
        std::shared_ptr<PendingFree> oldest;
        try {
            for (StreamPool* pool : all_pools()) {
                std::lock_guard lock(pool->mu);
                if (pool->pending.empty()) continue;
                const auto& front = pool->pending.front();
                if (!oldest || front->free_seq < oldest->free_seq) oldest = front;
            }
        } catch (...) {
            return;
        }
        if (!oldest) return;
        pending_free_waits_.fetch_add(1, std::memory_order_relaxed);
        wait_and_settle(oldest);
    }
}

Result<void> BlockAllocator::record_use(const Block* block, keel_stream stream,
                                        std::vector<RecordedUse>& uses,
                                        std::optional<StreamGeneration> known) {
    if (block == nullptr) return ok();
    if (stream == nullptr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Buffer::record_stream] stream is null");
    if (stream == BlockAllocator::stream(block)) return ok();
    const StreamGeneration generation = known ? *known : stream_generation(stream);
    for (RecordedUse& use : uses) {
        if (use.stream != stream) continue;
        use.generation = generation;  // the handle may name a newer stream now
        return ok();
    }
    try {
        uses.push_back(RecordedUse{stream, generation});
    } catch (...) {
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[Buffer::record_stream] host allocation failed");
    }
    return ok();
}

Result<void> BlockAllocator::check_view(const char* where, const char* role, keel_device_addr addr,
                                        std::uint64_t size) const {
    if (!checked_) return ok();
    return checked_->check_view(where, role, addr, size);
}

void BlockAllocator::wait_for_stream(const StreamPool& pool) noexcept {
    if (pool.stream == nullptr) return;  // the leftovers: no stream's work uses them
    keel_event event = nullptr;
    {
        const OpenStream open = keep_open(pool.stream, pool.opened_as, Match::or_newer);
        if (!open) return;
        if (auto e = events_.acquire(); e.ok()) {
            if (ops_.event_record(*e, pool.stream).ok()) event = *e;
            else events_.release(*e);
        }
        if (event == nullptr) {
            // No event: wait for the stream itself, kept open meanwhile.
            if (auto r = ops_.stream_synchronize(pool.stream); !r.ok())
                detail::log_debug("[BlockAllocator] " + r.error().message());
            return;
        }
    }
    // Outside the registry's lock: streams may open and close meanwhile.
    if (auto r = wait_for_event(ops_, event); !r.ok()) detail::log_debug("[BlockAllocator] " + r.error().message());
    events_.release(event);
}

Result<void> BlockAllocator::release_cached() {
    if (checked_) return_blocks(checked_->drain());
    std::vector<ReleasedSegment> segments;
    for (StreamPool* pool : all_pools()) {
        const std::size_t before = segments.size();
        {
            std::lock_guard lock(pool->mu);
            collect_free_segments(*pool, segments);
        }
        // A free block is at once reusable by its own stream, so work
        // enqueued there before the free may still use it: the segment goes
        // back to the plugin only after that work.
        if (segments.size() > before) wait_for_stream(*pool);
    }
    Result<void> result = ok();
    free_segments(segments, &result);
    return result;
}

void BlockAllocator::free_segments(const std::vector<ReleasedSegment>& segments, Result<void>* result) noexcept {
    for (const ReleasedSegment& s : segments) {
        // The plugin is called after the pools' locks are released.
        auto r = ops_.device_free(s.addr);
        if (!r.ok()) {
            // The plugin kept the memory (e.g. a checker refusing a free
            // while queued work still uses it): keep it cached too.
            {
                std::lock_guard lock(s.pool->mu);
                readopt_segment(*s.pool, s);
            }
            if (result == nullptr)
                detail::log_error("[BlockAllocator::free] " + r.error().message());
            else if (result->ok())
                *result = std::move(r).error().context("CachingAllocator::release_cached");
            continue;
        }
        if (checked_) checked_->remove_segment(s.addr);
        reserved_bytes_.fetch_sub(s.size, std::memory_order_relaxed);
        raw_frees_.fetch_add(1, std::memory_order_relaxed);
    }
}

AllocatorStats BlockAllocator::stats() const {
    AllocatorStats s;
    for (StreamPool* pool : all_pools()) {
        std::lock_guard lock(pool->mu);
        s.allocated_bytes += pool->allocated_bytes;
        s.allocations += pool->allocations;
        s.cache_hits += pool->cache_hits;
        s.allocated_count += pool->allocated_count;
        s.requested_bytes += pool->requested_bytes;
        s.segment_count += pool->segment_count;
    }
    s.reserved_bytes = reserved_bytes_.load(std::memory_order_relaxed);
    s.pending_free_bytes = pending_bytes_.load(std::memory_order_relaxed);
    s.pending_free_count = pending_count_.load(std::memory_order_relaxed);
    const std::uint64_t used = s.allocated_bytes + s.pending_free_bytes;
    s.cached_bytes = s.reserved_bytes > used ? s.reserved_bytes - used : 0;
    s.peak_allocated_bytes = peak_allocated_.load(std::memory_order_relaxed);
    s.peak_reserved_bytes = peak_reserved_.load(std::memory_order_relaxed);
    s.peak_pending_free_bytes = peak_pending_.load(std::memory_order_relaxed);
    s.peak_in_use_bytes = peak_in_use_.load(std::memory_order_relaxed);
    s.raw_allocations = raw_allocs_.load(std::memory_order_relaxed);
    s.raw_frees = raw_frees_.load(std::memory_order_relaxed);
    s.oom_retries = oom_retries_.load(std::memory_order_relaxed);
    s.ooms = ooms_.load(std::memory_order_relaxed);
    s.reuse_waits = reuse_waits_.load(std::memory_order_relaxed);
    s.pending_free_waits = pending_free_waits_.load(std::memory_order_relaxed);
    return s;
}

void BlockAllocator::reset_peaks() noexcept {
    // The shared counter becomes exact, so the peaks start from the truth.
    try {
        for (StreamPool* pool : all_pools()) flush_credit(*pool);
    } catch (...) {
        detail::log_warn("[CachingAllocator::reset_peaks] out of host memory");
    }
    const std::uint64_t allocated = allocated_bytes_.load(std::memory_order_relaxed);
    const std::uint64_t pending = pending_bytes_.load(std::memory_order_relaxed);
    peak_allocated_.store(allocated, std::memory_order_relaxed);
    peak_reserved_.store(reserved_bytes_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    peak_pending_.store(pending, std::memory_order_relaxed);
    peak_in_use_.store(allocated + pending, std::memory_order_relaxed);
}

MemorySnapshot BlockAllocator::snapshot() const {
    MemorySnapshot snap;
    for (StreamPool* pool : all_pools()) {
        std::lock_guard lock(pool->mu);
        snapshot_pool(*pool, snap.segments);
    }
    std::sort(snap.segments.begin(), snap.segments.end(),
              [](const SegmentSnapshot& a, const SegmentSnapshot& b) { return a.addr < b.addr; });
    return snap;
}

}  // namespace keel::memory
