// PinnedBlocks: a cache of pinned (device-reachable) host blocks for staging
// copies between pageable host memory and a device.
//
// Blocks come in power-of-two sizes from `smallest` to `largest` and are
// reused, so steady-state traffic makes no pinned allocation. The bytes held
// (idle and lent) never pass `capacity`: at the limit lend() answers nothing
// and the caller takes another path. Blocks are allocated in lend(), on the
// enqueueing thread, and given back without any call into the driver, so a
// block may be given back from a driver callback thread.
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
    std::size_t largest = 4 * 1024 * 1024;  // a power of two, >= smallest
    std::uint64_t capacity = 256ull * 1024 * 1024;
};

struct PinnedBlock {
    void* data = nullptr;
    std::size_t size = 0;
};

struct PinnedBlocksStats {
    std::uint64_t allocations = 0;  // pinned allocations made
    std::uint64_t reuses = 0;       // lend() answered from the cache
    std::uint64_t refusals = 0;     // lend() at capacity
    std::uint64_t held_bytes = 0;   // idle + lent + retired now
    std::uint64_t lent_bytes = 0;   // lent now
};

class PinnedBlocks {
public:
    PinnedBlocks(std::unique_ptr<PinnedMemory> memory, const PinnedBlocksConfig& config);
    PinnedBlocks(const PinnedBlocks&) = delete;
    PinnedBlocks& operator=(const PinnedBlocks&) = delete;
    // Frees what is still held (release_all()).
    ~PinnedBlocks();

    // A block of at least min(bytes, largest) bytes: an idle one, or a new
    // allocation. Nothing when that would pass the capacity; the allocation's
    // error when it fails.
    [[nodiscard]] Result<std::optional<PinnedBlock>> lend(std::size_t bytes);
    // Back for reuse. No driver call.
    void give_back(PinnedBlock block) noexcept;
    // A block that may still be in use by a copy nobody waits for (an
    // enqueue failed half way): never lent again, freed by release_all().
    void retire(PinnedBlock block) noexcept;
    // Frees every block, idle and retired, once no stream can use them
    // (plugin shutdown). Lent blocks are freed when given back afterwards.
    void release_all() noexcept;

    [[nodiscard]] PinnedBlocksStats stats() const;
    [[nodiscard]] const PinnedBlocksConfig& config() const noexcept { return config_; }

private:
    [[nodiscard]] std::size_t class_of(std::size_t bytes) const noexcept;

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
