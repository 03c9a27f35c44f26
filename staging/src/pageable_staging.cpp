#include <keel/staging/pageable_staging.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <optional>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace keel::staging {

namespace {

// How many transfers are alive, for release_all() to wait on.
class Alive {
public:
    void add() {
        std::lock_guard lock(mu_);
        ++count_;
    }
    void remove() noexcept {
        // Notified under the lock: the waiter may free this the moment it
        // sees zero.
        std::lock_guard lock(mu_);
        if (--count_ == 0) none_.notify_all();
    }
    // Whether none is alive within `patience`.
    [[nodiscard]] bool wait_none(std::chrono::milliseconds patience) {
        std::unique_lock lock(mu_);
        return none_.wait_for(lock, patience, [this] { return count_ == 0; });
    }

private:
    std::mutex mu_;
    std::condition_variable none_;
    std::uint64_t count_ = 0;  // guarded by mu_
};

// One staged copy, shared by its steps. The enqueueing thread writes
// `enqueued` and, if its enqueue fails half way, `abandoned`; everything
// else is touched only by the steps, which the stream runs one after
// another.
struct Transfer {
    Transfer(PinnedBlocks& blocks, CopyPool& pool, Alive& alive, unsigned char* host, std::uint64_t size,
             std::uint64_t chunk_bytes)
        : blocks(blocks), pool(pool), alive(alive), host(host), size(size), chunk_bytes(chunk_bytes),
          chunks((size + chunk_bytes - 1) / chunk_bytes) {
        alive.add();
    }
    Transfer(const Transfer&) = delete;
    Transfer& operator=(const Transfer&) = delete;

    // Waits for the host copies it started; gives back the blocks the last
    // step did not (a copy that never enqueued anything), else keeps them
    // from reuse (a device copy nobody waits for may still use them).
    ~Transfer() {
        batches.clear();
        for (const PinnedBlock& b : lent) {
            if (complete) blocks.give_back(b);
            else blocks.retire(b);
        }
        alive.remove();  // last: release_all() may free everything then
    }

    [[nodiscard]] std::uint64_t offset(std::uint64_t k) const noexcept { return k * chunk_bytes; }
    [[nodiscard]] std::size_t bytes(std::uint64_t k) const noexcept {
        return static_cast<std::size_t>(std::min(chunk_bytes, size - offset(k)));
    }
    [[nodiscard]] void* block(std::uint64_t k) const noexcept { return lent[k % lent.size()].data; }

    // Starts chunk `started`'s host copy (source to block, or block to
    // destination). `mu` held.
    void start_next(bool into_block) {
        const std::uint64_t k = started++;
        CopyBatch& batch = batches.emplace_back();
        if (into_block) pool.copy_async(block(k), host + offset(k), bytes(k), batch);
        else pool.copy_async(host + offset(k), block(k), bytes(k), batch);
    }
    // Only steps append batches and they run one at a time, so a step reads
    // its own batch without the lock; a deque's elements stay put.
    void wait(std::uint64_t k) { pool.wait(batches[k]); }
    // Also called by abandon() on the enqueueing thread while a step may
    // append: the batches are found under the lock (an append may move the
    // deque's index), then waited on without it.
    void wait_all() {
        std::vector<CopyBatch*> started_batches;
        {
            std::lock_guard lock(mu);
            for (CopyBatch& b : batches) started_batches.push_back(&b);
        }
        for (CopyBatch* b : started_batches) pool.wait(*b);
    }
    // Whether a step may start host copies; false also marks it failed.
    [[nodiscard]] bool may_copy(bool stream_ok) {
        if (!stream_ok || abandoned) failed = true;
        return !failed;
    }

    // Step k of a copy to the device: chunk k is in its block when it
    // returns, and the next chunks are being filled.
    void to_device_step(std::uint64_t k, bool stream_ok) {
        {
            std::lock_guard lock(mu);
            if (may_copy(stream_ok) && started == k) start_next(true);
        }
        if (failed) {
            wait_all();
            return;
        }
        wait(k);
        // A chunk may only be read once its own step and device copy were
        // enqueued: a copy whose enqueue failed half way reads no further.
        std::lock_guard lock(mu);
        if (!may_copy(true)) return;
        const std::uint64_t limit =
            std::min<std::uint64_t>(k + lent.size(), enqueued.load(std::memory_order_acquire));
        while (started < limit) start_next(true);
    }
    // Step k of a copy to the host: chunk k is in its block; copy it out, and
    // free the block the next device copy writes.
    void to_host_step(std::uint64_t k, bool stream_ok) {
        {
            std::lock_guard lock(mu);
            if (may_copy(stream_ok)) start_next(false);
        }
        if (failed) {
            wait_all();
        } else {
            const std::uint64_t next = k + 1;
            if (next < chunks && next >= lent.size()) wait(next - lent.size());
        }
        if (k + 1 == chunks) finish();
    }
    // The last step: the blocks go back inside it, not when the last
    // reference to the transfer goes, so that they are back before the
    // stream passes this point (a stream synchronisation promises it; the
    // closure holding the transfer may be destroyed later on the driver's
    // thread).
    void finish() {
        wait_all();
        for (const PinnedBlock& b : lent) blocks.give_back(b);
        lent.clear();
        complete = true;
    }
    // The enqueue failed after some steps were enqueued and the caller is
    // about to get the error, after which it may free or reuse the host
    // memory: the steps start no more host copies, and the ones started are
    // waited for here (host copies only, never the device).
    void abandon() {
        {
            std::lock_guard lock(mu);
            abandoned = true;
        }
        wait_all();
    }

    PinnedBlocks& blocks;
    CopyPool& pool;
    Alive& alive;
    unsigned char* const host;
    const std::uint64_t size;
    const std::uint64_t chunk_bytes;
    const std::uint64_t chunks;
    std::vector<PinnedBlock> lent;
    std::atomic<std::uint64_t> enqueued{0};  // chunks whose step and device copy were enqueued
    std::mutex mu;                 // orders starting host copies against abandon()
    bool abandoned = false;        // guarded by mu
    std::deque<CopyBatch> batches;  // one per started chunk, in order; appended under mu
    std::uint64_t started = 0;      // guarded by mu
    bool failed = false;            // steps only
    bool complete = false;
};

// The largest block: a chunk, rounded up to a power of two, but no larger
// than the capacity allows (smaller chunks rather than no staging at all).
std::size_t block_bytes(const PageableStagingSettings& config) {
    std::size_t bytes =
        std::bit_ceil(std::max(static_cast<std::size_t>(config.chunk_bytes), kSmallestStagingBlock));
    if (config.capacity < bytes)
        bytes = std::max<std::size_t>(kSmallestStagingBlock, std::bit_floor(static_cast<std::size_t>(config.capacity)));
    return bytes;
}

}  // namespace

struct PageableStaging::Core {
    Core(std::unique_ptr<PinnedMemory> memory, const PinnedBlocksConfig& config)
        : blocks(std::move(memory), config) {}

    PinnedBlocks blocks;
    std::once_flag copier_once;
    std::unique_ptr<CopyPool> copier;  // made by the first staged copy
    Alive alive;
};

PageableStaging::PageableStaging(std::unique_ptr<PinnedMemory> memory, const StagingConfig& config)
    : config_(config.pageable),
      copy_(CopyPoolConfig{.threads = config.copy_threads,
                           .min_parallel_bytes = static_cast<std::size_t>(config.pageable.parallel_min_bytes),
                           .min_slice_bytes = static_cast<std::size_t>(config.copy_slice_min_bytes)}),
      core_(std::make_unique<Core>(std::move(memory), PinnedBlocksConfig{.smallest = kSmallestStagingBlock,
                                                                        .largest = block_bytes(config.pageable),
                                                                        .capacity = config.pageable.capacity})) {}

PageableStaging::~PageableStaging() { release_all(); }

CopyPool& PageableStaging::copier() {
    std::call_once(core_->copier_once, [this] {
        core_->copier = std::make_unique<CopyPool>(copy_);
        host_threads_.store(core_->copier->threads(), std::memory_order_relaxed);
    });
    return *core_->copier;
}

Result<void> PageableStaging::to_device(StagingStream& stream, const void* src, std::uint64_t size) {
    return stage(stream, static_cast<unsigned char*>(const_cast<void*>(src)), size, true);
}

Result<void> PageableStaging::to_host(StagingStream& stream, void* dst, std::uint64_t size) {
    return stage(stream, static_cast<unsigned char*>(dst), size, false);
}

Result<void> PageableStaging::stage(StagingStream& stream, unsigned char* host, std::uint64_t size,
                                    bool to_device) {
    if (size == 0) return ok();
    PinnedBlocks& blocks = core_->blocks;
    const std::uint64_t chunk = blocks.largest();
    auto transfer = std::make_shared<Transfer>(blocks, copier(), core_->alive, host, size, chunk);
    const std::uint64_t wanted =
        std::min<std::uint64_t>(std::max<std::uint32_t>(config_.blocks_per_copy, 1), transfer->chunks);
    const std::size_t first_chunk = transfer->bytes(0);
    transfer->lent.reserve(static_cast<std::size_t>(wanted));
    while (transfer->lent.size() < wanted) {
        auto lent = blocks.lend(first_chunk);
        if (!lent.ok()) {
            transfer->complete = true;  // nothing enqueued: the blocks go back
            return std::move(lent).error().context("pageable copy");
        }
        if (!*lent) break;
        transfer->lent.push_back(**lent);
    }
    if (transfer->lent.empty()) {
        transfer->complete = true;
        refused_copies_.fetch_add(1, std::memory_order_relaxed);
        // Not a slower path of CUDA's or the driver's own: those read pageable
        // memory at enqueue or wait for the copy, which keel.h rules out. The
        // caller (the runtime) may wait for its stream and try again.
        return Error(KEEL_STATUS_OUT_OF_MEMORY,
                     "pageable copy of " + std::to_string(size) + " bytes: the " +
                         std::to_string(config_.capacity >> 20) +
                         " MiB of pinned staging memory are all in use by copies in flight; nothing was "
                         "enqueued (KEEL_PAGEABLE_STAGING_MIB raises the limit)");
    }
    if (transfer->lent.size() < wanted) short_copies_.fetch_add(1, std::memory_order_relaxed);
    copies_.fetch_add(1, std::memory_order_relaxed);

    // Until the first enqueue succeeds, a failure gives the blocks back;
    // after it, the steps already enqueued leave the host memory alone.
    bool any_enqueued = false;
    auto fail = [&](Error error) -> Result<void> {
        if (!any_enqueued) transfer->complete = true;
        else transfer->abandon();
        return std::move(error).context("pageable copy");
    };
    for (std::uint64_t k = 0; k < transfer->chunks; ++k) {
        Transfer* t = transfer.get();
        if (to_device) {
            auto stepped = stream.enqueue_host_step(
                [transfer, k](bool ok) { transfer->to_device_step(k, ok); });
            if (!stepped.ok()) return fail(std::move(stepped).error());
            any_enqueued = true;
            auto copied = stream.enqueue_device_copy(t->offset(k), t->block(k), t->bytes(k));
            if (!copied.ok()) return fail(std::move(copied).error());
        } else {
            auto copied = stream.enqueue_device_copy(t->offset(k), t->block(k), t->bytes(k));
            if (!copied.ok()) return fail(std::move(copied).error());
            any_enqueued = true;
            auto stepped = stream.enqueue_host_step(
                [transfer, k](bool ok) { transfer->to_host_step(k, ok); });
            if (!stepped.ok()) return fail(std::move(stepped).error());
        }
        t->enqueued.store(k + 1, std::memory_order_release);
    }
    if (to_device) {
        // The last device copy reads its block after the last step: the
        // blocks go back once it ran.
        auto released = stream.enqueue_host_step([transfer](bool) { transfer->finish(); });
        if (!released.ok()) return fail(std::move(released).error());
    }
    return ok();
}

void PageableStaging::release_all() noexcept {
    if (!core_) return;
    // Normally nothing is alive here (every stream was synchronised). A
    // stream that failed may run its steps a little later; a driver that
    // never runs them leaves the staging leaked: steps that still come find
    // it intact and give their blocks back without calling the driver.
    constexpr std::chrono::milliseconds kPatience{10'000};
    try {
        if (!core_->alive.wait_none(kPatience)) {
            (void)core_.release();
            return;
        }
    } catch (...) {
        (void)core_.release();  // could not wait (std::system_error): leak, never free under a step
        return;
    }
    core_->blocks.release_all();
}

PageableStagingStats PageableStaging::stats() const {
    PageableStagingStats s;
    if (core_) s.blocks = core_->blocks.stats();
    s.copies = copies_.load(std::memory_order_relaxed);
    s.short_copies = short_copies_.load(std::memory_order_relaxed);
    s.refused_copies = refused_copies_.load(std::memory_order_relaxed);
    s.host_threads = host_threads_.load(std::memory_order_relaxed);
    return s;
}

Result<void> PageableStaging::write_stats(keel_pageable_staging_stats* out) const {
    if (out == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "out is null");
    const PageableStagingStats s = stats();
    keel_pageable_staging_stats abi{};
    abi.struct_size = out->struct_size;
    abi.copies = s.copies;
    abi.short_copies = s.short_copies;
    abi.refused_copies = s.refused_copies;
    abi.pinned_allocations = s.blocks.allocations;
    abi.pinned_frees = s.blocks.frees;
    abi.block_reuses = s.blocks.reuses;
    abi.held_bytes = s.blocks.held_bytes;
    abi.lent_bytes = s.blocks.lent_bytes;
    abi.capacity_bytes = config_.capacity;
    abi.host_copy_threads = s.host_threads;
    std::memcpy(out, &abi, std::min<std::size_t>(out->struct_size, sizeof abi));
    return ok();
}

}  // namespace keel::staging
