#include <keel/staging/pinned_blocks.hpp>

#include <algorithm>
#include <bit>
#include <string>

namespace keel::staging {

PinnedBlocks::PinnedBlocks(std::unique_ptr<PinnedMemory> memory, const PinnedBlocksConfig& config)
    : memory_(std::move(memory)),
      config_(config),
      classes_(static_cast<std::size_t>(std::countr_zero(std::bit_ceil(std::max(config.largest, config.smallest))) -
                                        std::countr_zero(std::bit_ceil(config.smallest))) + 1),
      idle_(classes_) {}

PinnedBlocks::~PinnedBlocks() { release_all(); }

std::size_t PinnedBlocks::class_of(std::size_t bytes) const noexcept {
    const std::size_t smallest = std::bit_ceil(config_.smallest);
    if (bytes <= smallest) return 0;
    const std::size_t k = static_cast<std::size_t>(std::countr_zero(std::bit_ceil(bytes)) -
                                                   std::countr_zero(smallest));
    return std::min(k, classes_ - 1);
}

std::size_t PinnedBlocks::class_bytes(std::size_t k) const noexcept {
    return std::bit_ceil(config_.smallest) << k;
}

std::optional<PinnedBlock> PinnedBlocks::take_idle_locked(std::size_t k) noexcept {
    if (closed_ || idle_[k].empty()) return std::nullopt;
    const std::size_t size = class_bytes(k);
    void* data = idle_[k].back();
    idle_[k].pop_back();
    ++stats_.reuses;
    stats_.idle_bytes -= size;
    stats_.lent_bytes += size;
    return PinnedBlock{data, size};
}

std::optional<PinnedBlock> PinnedBlocks::take_idle(std::size_t bytes) noexcept {
    if (bytes > largest()) return std::nullopt;
    std::lock_guard lock(mu_);
    return take_idle_locked(class_of(bytes));
}

Result<std::optional<PinnedBlock>> PinnedBlocks::lend(std::size_t bytes) {
    if (bytes > largest())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "a staging block of " + std::to_string(bytes) +
                                                       " bytes asked for; the largest is " +
                                                       std::to_string(largest()));
    const std::size_t k = class_of(bytes);
    const std::size_t size = class_bytes(k);
    {
        std::lock_guard lock(mu_);
        if (closed_) return Error(KEEL_STATUS_INTERNAL, "pinned staging blocks used after shutdown");
        if (auto idle = take_idle_locked(k)) return idle;
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
        if (!closed_ && stats_.idle_bytes + block.size <= config_.max_idle_bytes) {
            try {
                idle_[class_of(block.size)].push_back(block.data);
                stats_.idle_bytes += block.size;
                return;
            } catch (...) {
                // Out of host memory for the list: free the block instead.
            }
        }
        stats_.held_bytes -= block.size;
        ++stats_.frees;
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

void PinnedBlocks::free_blocks(const std::vector<std::vector<void*>>& idle) noexcept {
    std::uint64_t bytes = 0;
    std::uint64_t count = 0;
    for (std::size_t k = 0; k < idle.size(); ++k)
        for (void* data : idle[k]) {
            memory_->free(data);
            bytes += class_bytes(k);
            ++count;
        }
    std::lock_guard lock(mu_);
    stats_.held_bytes -= bytes;
    stats_.idle_bytes -= bytes;
    stats_.frees += count;
}

void PinnedBlocks::trim() noexcept {
    std::vector<std::vector<void*>> idle(classes_);
    {
        std::lock_guard lock(mu_);
        idle.swap(idle_);
    }
    free_blocks(idle);
}

void PinnedBlocks::release_all() noexcept {
    std::vector<std::vector<void*>> idle(classes_);
    std::vector<PinnedBlock> retired;
    {
        std::lock_guard lock(mu_);
        closed_ = true;
        idle.swap(idle_);
        retired.swap(retired_);
    }
    free_blocks(idle);
    std::uint64_t bytes = 0;
    for (const PinnedBlock& b : retired) {
        memory_->free(b.data);
        bytes += b.size;
    }
    std::lock_guard lock(mu_);
    stats_.held_bytes -= bytes;
    stats_.frees += retired.size();
}

PinnedBlocksStats PinnedBlocks::stats() const {
    std::lock_guard lock(mu_);
    return stats_;
}

}  // namespace keel::staging
