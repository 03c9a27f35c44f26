// Host blocks of one device for copies staged between devices
// (stream_copy.cpp), kept for the next copy: a copy of a few KiB costs far
// less than the two host_alloc/host_free pairs (pinned memory, often a
// driver call that maps and locks pages) it would otherwise make per slot
// of its ring.
//
// Blocks are the device's host_alloc memory, or ordinary page-aligned
// memory where it has none. Sizes are powers of two from 4 KiB, so a
// repeated copy finds its block; at most kMaxIdleBytes stay idle per device
// (a block given back beyond that is freed).
//
// Sync: every member may be called from any thread; give_back() also from
// the runtime's hold threads (it may call host_free, never from a plugin
// thread). Blocks are raw memory, not PinnedBuffers, because a PinnedBuffer
// holds its device and this cache lives inside it.
#pragma once

#include "../plugin_api.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstdint>
#include <mutex>
#include <vector>

namespace keel::cross_device {

struct StagingBlock {
    void* data = nullptr;
    std::uint64_t size = 0;  // a power of two, >= what was asked for
    bool pinned = false;     // host_alloc memory of the device
};

class StagingBlocks {
public:
    static constexpr std::uint64_t kMaxIdleBytes = 16ull << 20;

    StagingBlocks() = default;
    StagingBlocks(const StagingBlocks&) = delete;
    StagingBlocks& operator=(const StagingBlocks&) = delete;
    StagingBlocks(StagingBlocks&&) = delete;
    StagingBlocks& operator=(StagingBlocks&&) = delete;
    ~StagingBlocks() = default;  // close() has freed every block

    // An idle block of at least `bytes`, or a new one.
    [[nodiscard]] Result<StagingBlock> acquire(const detail::PluginApi& api, keel_device device, std::uint64_t bytes);
    // Keeps `block` (from acquire of this device; nothing may use it any
    // more) for a later copy, or frees it.
    void give_back(const detail::PluginApi& api, keel_device device, StagingBlock block) noexcept;
    // Before plugin_shutdown: frees the idle blocks. None is in use by then
    // (copies hold their devices until they gave their blocks back).
    void close(const detail::PluginApi& api, keel_device device) noexcept;

    // Blocks made and blocks reused since the start, for tests.
    [[nodiscard]] std::uint64_t allocations() const;
    [[nodiscard]] std::uint64_t reuses() const;

private:
    static void free_block(const detail::PluginApi& api, keel_device device, StagingBlock block) noexcept;

    mutable std::mutex mu_;
    std::vector<StagingBlock> idle_;  // guarded by mu_
    std::uint64_t idle_bytes_ = 0;    // guarded by mu_
    std::uint64_t allocations_ = 0;   // guarded by mu_
    std::uint64_t reuses_ = 0;        // guarded by mu_
};

}  // namespace keel::cross_device
