#include <keel/staging/pinned_blocks.hpp>

#include <bit>
#include <string>

namespace keel::staging {

PinnedBlocks::PinnedBlocks(std::unique_ptr<PinnedMemory> memory, const PinnedBlocksConfig& config)
    : memory_(std::move(memory)),
      config_(config),
      classes_(static_cast<std::size_t>(std::countr_zero(std::bit_ceil(config.largest)) -
                                        std::countr_zero(std::bit_ceil(config.smallest))) + 1),
      idle_(classes_) {}

PinnedBlocks::~PinnedBlocks() { release_all(); }

std::size_t PinnedBlocks::class_of(std::size_t bytes) const noexcept {
    const std::size_t smallest = std::bit_ceil(config_.smallest);
    const std::size_t rounded = std::bit_ceil(bytes < smallest ? smallest : bytes);
    const std::size_t k = static_cast<std::size_t>(std::countr_zero(rounded) - std::countr_zero(smallest));
    return k < classes_ ? k : classes_ - 1;
}

Result<std::optional<PinnedBlock>> PinnedBlocks::lend(std::size_t bytes) {
    const std::size_t k = class_of(bytes);
    const std::size_t size = std::bit_ceil(config_.smallest) << k;
    {
        std::lock_guard lock(mu_);
        if (closed_) return Error(KEEL_STATUS_INTERNAL, "pinned staging blocks used after shutdown");
        if (!idle_[k].empty()) {
            void* data = idle_[k].back();
            idle_[k].pop_back();
            ++stats_.reuses;
            stats_.lent_bytes += size;
            return std::optional<PinnedBlock>(PinnedBlock{data, size});
        }
        if (stats_.held_bytes + size > config_.capacity) {
            ++stats_.refusals;
            return std::optional<PinnedBlock>();
        }
        // Reserved before the (slow) allocation, which runs unlocked.
        stats_.held_bytes += size;
        stats_.lent_bytes += size;
    }
    auto allocated = memory_->allocate(size);
    std::lock_guard lock(mu_);
    if (!allocated.ok()) {
        stats_.held_bytes -= size;
        stats_.lent_bytes -= size;
        return std::move(allocated).error().context(std::to_string(size) + " bytes of pinned staging memory");
    }
    ++stats_.allocations;
    return std::optional<PinnedBlock>(PinnedBlock{*allocated, size});
}

void PinnedBlocks::give_back(PinnedBlock block) noexcept {
    if (block.data == nullptr) return;
    {
        std::lock_guard lock(mu_);
        stats_.lent_bytes -= block.size;
        if (!closed_) {
            try {
                idle_[class_of(block.size)].push_back(block.data);
                return;
            } catch (...) {
                // Out of host memory for the list: free the block instead.
            }
        }
        stats_.held_bytes -= block.size;
    }
    memory_->free(block.data);
}

void PinnedBlocks::retire(PinnedBlock block) noexcept {
    if (block.data == nullptr) return;
    std::lock_guard lock(mu_);
    stats_.lent_bytes -= block.size;
    try {
        retired_.push_back(block);
    } catch (...) {
        // Out of host memory: the block stays pinned until the process ends.
    }
}

void PinnedBlocks::release_all() noexcept {
    std::vector<std::vector<void*>> idle;
    std::vector<PinnedBlock> retired;
    {
        std::lock_guard lock(mu_);
        closed_ = true;
        idle.swap(idle_);
        retired.swap(retired_);
    }
    std::uint64_t freed = 0;
    const std::size_t smallest = std::bit_ceil(config_.smallest);
    for (std::size_t k = 0; k < idle.size(); ++k)
        for (void* data : idle[k]) {
            memory_->free(data);
            freed += smallest << k;
        }
    for (const PinnedBlock& b : retired) {
        memory_->free(b.data);
        freed += b.size;
    }
    std::lock_guard lock(mu_);
    stats_.held_bytes -= freed;
}

PinnedBlocksStats PinnedBlocks::stats() const {
    std::lock_guard lock(mu_);
    return stats_;
}

}  // namespace keel::staging
