// PinnedBlocks: a cache of pinned (device-reachable) host blocks for staging
// copies between pageable host memory and a device. The runtime's staging of
// host containers and the plugins' staging of pageable memory both keep
// their blocks here.
//
// Blocks come in power-of-two sizes from `smallest` to `largest` and are
// reused, so steady-state traffic makes no pinned allocation. The bytes held
// (idle and lent) never pass `capacity`: at the limit lend() answers nothing
// and the caller takes another path. Idle blocks past `max_idle_bytes` are
// freed when given back; with the default (the capacity) give_back() never
// calls into the driver, so a block may be given back from a driver
// callback thread. Blocks are allocated in lend(), on the calling thread.
//
// One cache, two owners, each with its own instance, both configured from
// the one StagingConfig (<keel/base/staging_config.hpp>):
//   - the runtime, one per memory pool, for the enqueue-time staging of
//     borrowed host containers (Stream::copy reads them before it returns,
//     which no ABI entry can promise), its blocks coming back when an event
//     says their copy ran;
//   - a plugin whose device cannot reach pageable memory, one per device
//     inside its PageableStaging (execution-time staging behind memcpy_h2d
//     and memcpy_d2h, StagingConfig::pageable): keel.h promises those
//     entries to every caller of the C ABI, not only to keel's runtime, and a
//     plugin cannot borrow the runtime's blocks across the ABI.
// Sharing one instance would need an ABI entry that lends pinned blocks.
// A Communicator's generic path keeps a third cache, of PinnedBuffers
// (comm/src/staging_cache.hpp says why it cannot be this one).
//
// Thread-safety: PinnedBlocks is Sync; every member may be called from any
// thread.
#pragma once

#include <keel/result.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace keel::staging {

// How a plugin allocates host memory its device can copy from and to
// (cudaHostAlloc, zeMemAllocHost). Called on enqueueing threads, never from
// a stream callback.
class PinnedMemory {
public:
    virtual ~PinnedMemory() = default;
    [[nodiscard]] virtual Result<void*> allocate(std::size_t bytes) = 0;
    virtual void free(void* block) noexcept = 0;
};

struct PinnedBlocksConfig {
    std::size_t smallest = 4 * 1024;
    std::size_t largest = 4 * 1024 * 1024;  // rounded up to a power of two, >= smallest
    std::uint64_t capacity = 256ull * 1024 * 1024;
    // Idle bytes kept for reuse; UINT64_MAX: up to the capacity.
    std::uint64_t max_idle_bytes = UINT64_MAX;
};

struct PinnedBlock {
    void* data = nullptr;
    std::size_t size = 0;
};

struct PinnedBlocksStats {
    std::uint64_t allocations = 0;  // pinned allocations made
    std::uint64_t frees = 0;        // pinned blocks freed
    std::uint64_t reuses = 0;       // lend() answered from the cache
    std::uint64_t refusals = 0;     // lend() at capacity
    std::uint64_t held_bytes = 0;   // idle + lent + retired now
    std::uint64_t lent_bytes = 0;   // lent now
    std::uint64_t idle_bytes = 0;   // cached for reuse now
};

class PinnedBlocks {
public:
    PinnedBlocks(std::unique_ptr<PinnedMemory> memory, const PinnedBlocksConfig& config);
    PinnedBlocks(const PinnedBlocks&) = delete;
    PinnedBlocks& operator=(const PinnedBlocks&) = delete;
    // Frees what is still held (release_all()).
    ~PinnedBlocks();

    // A block of at least `bytes` bytes: an idle one, or a new allocation.
    // Nothing when that would pass the capacity; the allocation's error when
    // it fails; INVALID_ARGUMENT when `bytes` is above `largest`.
    [[nodiscard]] Result<std::optional<PinnedBlock>> lend(std::size_t bytes);
    // An idle block for `bytes` (<= largest), never a new allocation.
    [[nodiscard]] std::optional<PinnedBlock> take_idle(std::size_t bytes) noexcept;
    // Back for reuse (freed instead past max_idle_bytes).
    void give_back(PinnedBlock block) noexcept;
    // A block that may still be in use by a copy nobody waits for (an
    // enqueue failed half way): never lent again, freed by release_all().
    void retire(PinnedBlock block) noexcept;
    // Frees the idle blocks.
    void trim() noexcept;
    // Frees every block, idle and retired, once no stream can use them
    // (plugin shutdown). Lent blocks are freed when given back afterwards.
    void release_all() noexcept;

    [[nodiscard]] PinnedBlocksStats stats() const;
    [[nodiscard]] const PinnedBlocksConfig& config() const noexcept { return config_; }
    // The size of the block lend(bytes) returns.
    [[nodiscard]] std::size_t block_size(std::size_t bytes) const noexcept { return class_bytes(class_of(bytes)); }
    [[nodiscard]] std::size_t largest() const noexcept { return class_bytes(classes_ - 1); }

private:
    [[nodiscard]] std::size_t class_of(std::size_t bytes) const noexcept;
    [[nodiscard]] std::size_t class_bytes(std::size_t k) const noexcept;
    [[nodiscard]] std::optional<PinnedBlock> take_idle_locked(std::size_t k) noexcept;  // mu_ held
    // Frees `blocks` of class k each (no lock held) and counts it.
    void free_blocks(const std::vector<std::vector<void*>>& idle) noexcept;

    const std::unique_ptr<PinnedMemory> memory_;
    const PinnedBlocksConfig config_;
    const std::size_t classes_;  // smallest << 0 .. smallest << (classes_ - 1) == largest
    mutable std::mutex mu_;
    std::vector<std::vector<void*>> idle_;  // per class; guarded by mu_
    std::vector<PinnedBlock> retired_;      // guarded by mu_
    PinnedBlocksStats stats_;               // guarded by mu_
    bool closed_ = false;                   // guarded by mu_: after release_all, give_back frees
};

}  // namespace keel::staging
