#include "staging_blocks.hpp"

#include "../logging.hpp"

#include <bit>
#include <cstdlib>
#include <string>
#include <utility>

namespace keel::cross_device {

namespace {
constexpr std::uint64_t kSmallestBlock = 4096;  // also the alignment of ordinary memory
}

Result<StagingBlock> StagingBlocks::acquire(const detail::PluginApi& api, keel_device device, std::uint64_t bytes) {
    if (bytes > (1ull << 62))
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[Stream::copy] a staging block of " + std::to_string(bytes) +
                                                    " bytes cannot be allocated");
    const std::uint64_t size = std::bit_ceil(std::max(bytes, kSmallestBlock));
    {
        std::lock_guard lock(mu_);
        for (auto it = idle_.begin(); it != idle_.end(); ++it) {
            if (it->size != size) continue;
            StagingBlock block = *it;
            idle_.erase(it);
            idle_bytes_ -= block.size;
            ++reuses_;
            return block;
        }
        ++allocations_;
    }
    StagingBlock block{nullptr, size, api.has_host_alloc()};
    if (block.pinned) {
        KEEL_TRY(api.host_alloc(device, size, &block.data));
        if (block.data == nullptr)
            return Error(KEEL_STATUS_INTERNAL, "[Stream::copy] host_alloc succeeded but returned null");
        return block;
    }
    block.data = std::aligned_alloc(kSmallestBlock, static_cast<std::size_t>(size));
    if (block.data == nullptr)
        return Error(KEEL_STATUS_OUT_OF_MEMORY,
                     "[Stream::copy] a staging block of " + std::to_string(size) + " bytes cannot be allocated");
    return block;
}

void StagingBlocks::give_back(const detail::PluginApi& api, keel_device device, StagingBlock block) noexcept {
    if (block.data == nullptr) return;
    {
        std::lock_guard lock(mu_);
        if (idle_bytes_ + block.size <= kMaxIdleBytes) {
            try {
                idle_.push_back(block);
                idle_bytes_ += block.size;
                return;
            } catch (...) {
                // Out of host memory: free it instead.
            }
        }
    }
    free_block(api, device, block);
}

void StagingBlocks::close(const detail::PluginApi& api, keel_device device) noexcept {
    std::vector<StagingBlock> idle;
    {
        std::lock_guard lock(mu_);
        idle.swap(idle_);
        idle_bytes_ = 0;
    }
    for (const StagingBlock& block : idle) free_block(api, device, block);
}

std::uint64_t StagingBlocks::allocations() const {
    std::lock_guard lock(mu_);
    return allocations_;
}

std::uint64_t StagingBlocks::reuses() const {
    std::lock_guard lock(mu_);
    return reuses_;
}

void StagingBlocks::free_block(const detail::PluginApi& api, keel_device device, StagingBlock block) noexcept {
    if (!block.pinned) {
        std::free(block.data);
        return;
    }
    if (auto r = api.host_free(device, block.data); !r)
        detail::log_warn("[Stream::copy] freeing a staging block: " + r.error().message());
}

}  // namespace keel::cross_device
