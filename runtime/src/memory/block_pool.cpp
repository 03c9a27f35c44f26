#include "memory/block_pool.hpp"

namespace keel::memory {

namespace {

FreeTree& tree_of(StreamPool& pool, bool small) { return small ? pool.small_free : pool.large_free; }

// Cuts `block` (allocated, `rounded` <= size) down to `rounded`, filing the
// rest as a free block when the policy says it is worth keeping apart.
void split(StreamPool& pool, const SizePolicy& policy, Block* block, std::uint64_t rounded) {
    const bool small = block->segment->small;
    const std::uint64_t remainder = block->size - rounded;
    if (!policy.should_split(small, remainder)) return;
    Block* rest = pool.blocks.make();
    rest->addr = block->addr + rounded;
    rest->size = remainder;
    rest->segment = block->segment;
    rest->prev = block;
    rest->next = block->next;
    rest->state = BlockState::free;
    if (block->next != nullptr) block->next->prev = rest;
    block->next = rest;
    block->size = rounded;
    // The rest's other neighbour cannot be free (free neighbours are merged),
    // so no merge is needed here.
    tree_of(pool, small).insert(*rest);
}

}  // namespace

std::uint64_t SizePolicy::segment_size(std::uint64_t rounded) const noexcept {
    if (is_small(rounded)) return small_segment;
    if (rounded < large_segment / 2) return large_segment;
    return (rounded + large_rounding - 1) & ~(large_rounding - 1);
}

Block* take_free_block(StreamPool& pool, const SizePolicy& policy, std::uint64_t rounded,
                       std::uint64_t requested) {
    FreeTree& tree = tree_of(pool, policy.is_small(rounded));
    auto it = tree.lower_bound(rounded, SizeKey{});
    if (it == tree.end()) return nullptr;
    Block* block = &*it;
    tree.erase(it);
    block->state = BlockState::allocated;
    split(pool, policy, block, rounded);
    block->requested = requested;
    return block;
}

Block* carve_new_segment(StreamPool& pool, const SizePolicy& policy, keel_device_addr addr,
                         std::uint64_t seg_size, std::uint64_t rounded, std::uint64_t requested) {
    Segment* segment = pool.segment_store.make();
    segment->addr = addr;
    segment->size = seg_size;
    segment->small = policy.is_small(rounded);
    segment->pool = &pool;
    Block* block = pool.blocks.make();
    block->addr = addr;
    block->size = seg_size;
    block->segment = segment;
    block->state = BlockState::allocated;
    segment->first = block;
    pool.segments.push_back(*segment);
    ++pool.segment_count;
    split(pool, policy, block, rounded);
    block->requested = requested;
    return block;
}

void return_block(StreamPool& pool, Block* block) {
    FreeTree& tree = tree_of(pool, block->segment->small);
    block->state = BlockState::free;
    block->requested = 0;
    if (Block* prev = block->prev;
        prev != nullptr && prev->state == BlockState::free && !prev->parked) {
        tree.erase(tree.iterator_to(*prev));
        prev->size += block->size;
        prev->next = block->next;
        if (block->next != nullptr) block->next->prev = prev;
        pool.blocks.recycle(block);
        block = prev;
    }
    if (Block* next = block->next;
        next != nullptr && next->state == BlockState::free && !next->parked) {
        tree.erase(tree.iterator_to(*next));
        block->size += next->size;
        block->next = next->next;
        if (next->next != nullptr) next->next->prev = block;
        pool.blocks.recycle(next);
    }
    tree.insert(*block);
}

namespace {

void push_parked(Block*& head, Block* block) {
    block->state = BlockState::free;
    block->requested = 0;
    block->parked = true;
    block->parked_next = head;
    head = block;
}

Block* pop_parked(Block*& head, std::uint64_t requested) {
    Block* block = head;
    head = block->parked_next;
    block->parked = false;
    block->parked_next = nullptr;
    block->state = BlockState::allocated;
    block->requested = requested;
    return block;
}

bool park_large(StreamPool& pool, const SizePolicy& policy, Block* block) {
    if (pool.large_parked_bytes + block->size > policy.large_park_bytes) return false;
    StreamPool::LargeBin* bin = nullptr;
    for (auto& b : pool.large_bins) {
        if (b.count != 0 && b.size == block->size) {
            bin = &b;
            break;
        }
        if (b.count == 0 && bin == nullptr) bin = &b;  // a free bin, if no bin has this size
    }
    if (bin == nullptr || bin->count >= policy.park_depth) return false;
    bin->size = block->size;
    push_parked(bin->head, block);
    ++bin->count;
    pool.large_parked_bytes += block->size;
    return true;
}

}  // namespace

bool park(StreamPool& pool, const SizePolicy& policy, Block* block) {
    if (policy.park_depth == 0) return false;
    if (!block->segment->small) return park_large(pool, policy, block);
    const std::size_t index = block->size >> policy.quantum_shift;
    if (pool.parked_head.empty()) {
        pool.parked_head.assign((policy.small_limit >> policy.quantum_shift) + 1, nullptr);
        pool.parked_count.assign(pool.parked_head.size(), 0);
    }
    if (index >= pool.parked_head.size() || pool.parked_count[index] >= policy.park_depth ||
        pool.parked_bytes + block->size > policy.park_bytes)
        return false;
    push_parked(pool.parked_head[index], block);
    ++pool.parked_count[index];
    pool.parked_bytes += block->size;
    return true;
}

Block* take_parked(StreamPool& pool, const SizePolicy& policy, std::uint64_t rounded,
                   std::uint64_t requested) {
    if (!policy.is_small(rounded)) {
        if (pool.large_parked_bytes == 0) return nullptr;
        for (auto& bin : pool.large_bins) {
            if (bin.count == 0 || bin.size != rounded) continue;
            --bin.count;
            pool.large_parked_bytes -= rounded;
            return pop_parked(bin.head, requested);
        }
        return nullptr;
    }
    const std::size_t index = rounded >> policy.quantum_shift;
    if (index >= pool.parked_head.size() || pool.parked_head[index] == nullptr) return nullptr;
    --pool.parked_count[index];
    pool.parked_bytes -= rounded;
    return pop_parked(pool.parked_head[index], requested);
}

void unpark_all(StreamPool& pool) {
    auto drain = [&pool](Block*& head) {
        while (head != nullptr) {
            Block* block = head;
            head = block->parked_next;
            block->parked = false;
            block->parked_next = nullptr;
            return_block(pool, block);
        }
    };
    if (pool.parked_bytes != 0) {
        for (std::size_t i = 0; i < pool.parked_head.size(); ++i) {
            drain(pool.parked_head[i]);
            pool.parked_count[i] = 0;
        }
        pool.parked_bytes = 0;
    }
    if (pool.large_parked_bytes != 0) {
        for (auto& bin : pool.large_bins) {
            drain(bin.head);
            bin.count = 0;
        }
        pool.large_parked_bytes = 0;
    }
}

void collect_free_segments(StreamPool& pool, std::vector<ReleasedSegment>& out) {
    unpark_all(pool);
    for (auto it = pool.segments.begin(); it != pool.segments.end();) {
        Segment& segment = *it;
        Block* only = segment.first;
        const bool entirely_free =
            only->state == BlockState::free && only->prev == nullptr && only->next == nullptr;
        if (!entirely_free) {
            ++it;
            continue;
        }
        tree_of(pool, segment.small).erase(tree_of(pool, segment.small).iterator_to(*only));
        out.push_back(ReleasedSegment{segment.addr, segment.size, &pool, segment.small});
        it = pool.segments.erase(it);
        --pool.segment_count;
        pool.blocks.recycle(only);
        pool.segment_store.recycle(&segment);
    }
}

void readopt_segment(StreamPool& pool, const ReleasedSegment& released) {
    Segment* segment = pool.segment_store.make();
    segment->addr = released.addr;
    segment->size = released.size;
    segment->small = released.small;
    segment->pool = &pool;
    Block* block = pool.blocks.make();
    block->addr = released.addr;
    block->size = released.size;
    block->segment = segment;
    block->state = BlockState::free;
    segment->first = block;
    pool.segments.push_back(*segment);
    ++pool.segment_count;
    tree_of(pool, released.small).insert(*block);
}

StreamPool& lock_pool_of(const Block* block) noexcept {
    for (;;) {
        StreamPool* pool = pool_of(*block->segment);
        pool->mu.lock();
        if (pool_of(*block->segment) == pool) return *pool;
        pool->mu.unlock();  // it moved meanwhile
    }
}

bool movable(const Segment& segment) noexcept {
    for (const Block* b = segment.first; b != nullptr; b = b->next)
        if (b->state == BlockState::pending || b->parked) return false;
    return true;
}

std::uint64_t move_segment(StreamPool& from, StreamPool& to, Segment& segment) {
    std::uint64_t out = 0;
    for (Block* b = segment.first; b != nullptr; b = b->next) {
        if (b->state == BlockState::free) {
            tree_of(from, segment.small).erase(tree_of(from, segment.small).iterator_to(*b));
            tree_of(to, segment.small).insert(*b);
        } else if (!b->held_back) {
            ++out;
            --from.allocated_count;
            from.allocated_bytes -= b->size;
            from.requested_bytes -= b->requested;
            ++to.allocated_count;
            to.allocated_bytes += b->size;
            to.requested_bytes += b->requested;
        }
    }
    from.segments.erase(from.segments.iterator_to(segment));
    --from.segment_count;
    to.segments.push_back(segment);
    ++to.segment_count;
    std::atomic_ref<StreamPool*>(segment.pool).store(&to, std::memory_order_release);
    return out;
}

void move_owner_shares(StreamPool& from, StreamPool& to, std::uint64_t count, std::shared_ptr<void>& last) {
    if (count == 0) return;
    if (!to.owner) to.owner = from.owner;  // `from` holds one while it has blocks out
    to.owners += count;
    from.owners -= count;
    if (from.owners == 0 && from.orphaned) last = std::move(from.owner);
}

void snapshot_pool(StreamPool& pool, std::vector<SegmentSnapshot>& out) {
    for (Segment& segment : pool.segments) {
        SegmentSnapshot s;
        s.addr = segment.addr;
        s.size = segment.size;
        s.stream = pool.stream;
        s.small = segment.small;
        for (Block* b = segment.first; b != nullptr; b = b->next)
            s.blocks.push_back(BlockSnapshot{b->addr, b->size, b->requested, b->state, {}});
        out.push_back(std::move(s));
    }
}

}  // namespace keel::memory
