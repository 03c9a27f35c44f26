// What keeps a loaded plugin alive, without a counter that every thread
// writes for every event. Two kinds of owner, as for a memory instance and
// its buffers (memory/memory_core.hpp):
// - handles: every Device of the plugin (and so every Stream, Kernel and
//   memory instance made from one) shares one live handle group, which
//   owns the plugin;
// - events: an Event holds a share counted in the creating thread's shard
//   (memory/thread_shard.hpp). Each shard holds one reference to the plugin
//   for all its shares, taken at its first share and kept while a handle
//   group lives; once the group ends, each shard lets go of it as soon as
//   it has no share out, and the plugin goes with the last reference.
// An event made and dropped on one thread thus writes only its shard's
// line; the plugin's shared count is written only when groups start and end.
#pragma once

#include "memory/thread_shard.hpp"

#include <keel/base/spin_lock.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>

namespace keel::detail {

class Plugin;
struct DeviceSlot;

// Sync: every member may be called from any thread.
class PluginShares {
public:
    PluginShares() = default;
    PluginShares(const PluginShares&) = delete;
    PluginShares& operator=(const PluginShares&) = delete;
    PluginShares(PluginShares&&) = delete;
    PluginShares& operator=(PluginShares&&) = delete;

    // The plugin that owns these shares, weakly (once, before any other call).
    void set_owner(std::weak_ptr<Plugin> owner) noexcept { owner_ = std::move(owner); }

    // A Device's reference to `slot` (of this plugin): joins the live handle
    // group or starts one. The plugin must be alive (the caller holds a
    // reference or a share). Throws std::bad_alloc.
    [[nodiscard]] std::shared_ptr<const DeviceSlot> handle(const DeviceSlot& slot);

    // A share counted in the calling thread's shard; the caller holds a
    // Device of the plugin. Returns the shard, for let_go().
    [[nodiscard]] std::uint32_t take() noexcept;
    // Gives back a share of `shard`, from any thread: the plugin may go with
    // it, so nothing may touch the plugin after this call.
    void let_go(std::uint32_t shard) noexcept;

private:
    struct Handles;
    void handles_gone() noexcept;

    // Its sections are a few instructions: a spin lock, whose release is a
    // plain store, costs one atomic operation per share taken or given back.
    struct alignas(64) Shard {
        base::SpinLock mu;
        std::uint64_t shares = 0;
        std::shared_ptr<Plugin> owner;  // while shares are out or a group lives
        bool orphaned = false;          // no handle group lives
    };

    std::weak_ptr<Plugin> owner_;
    std::mutex handles_mu_;           // orders a group's end after a newer group's start
    std::weak_ptr<Handles> handles_;  // guarded by handles_mu_
    std::array<Shard, memory::kMaxShards> shards_;
};

}  // namespace keel::detail
