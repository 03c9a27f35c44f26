#include "plugin_shares.hpp"

#include "plugin.hpp"

#include <cassert>
#include <utility>

namespace keel::detail {

// The Devices of a plugin share one of these: its end tells the shards to
// let go of the plugin once their events are gone.
struct PluginShares::Handles {
    explicit Handles(std::shared_ptr<Plugin> p) noexcept : plugin(std::move(p)) {}
    Handles(const Handles&) = delete;
    Handles& operator=(const Handles&) = delete;
    Handles(Handles&&) = delete;
    Handles& operator=(Handles&&) = delete;
    ~Handles() { plugin->shares().handles_gone(); }  // before `plugin`, maybe the last reference, goes
    std::shared_ptr<Plugin> plugin;
};

std::shared_ptr<const DeviceSlot> PluginShares::handle(const DeviceSlot& slot) {
    std::lock_guard lock(handles_mu_);
    std::shared_ptr<Handles> group = handles_.lock();
    if (!group) {
        std::shared_ptr<Plugin> plugin = owner_.lock();
        assert(plugin);  // the caller holds a reference or a share
        group = std::make_shared<Handles>(std::move(plugin));
        for (Shard& shard : shards_) {
            std::lock_guard shard_lock(shard.mu);
            shard.orphaned = false;
        }
        handles_ = group;
    }
    return std::shared_ptr<const DeviceSlot>(std::move(group), &slot);  // shares the group's count
}

std::uint32_t PluginShares::take() noexcept {
    const std::uint32_t index = memory::thread_shard();
    Shard& shard = shards_[index];
    std::lock_guard lock(shard.mu);
    // The caller's Device keeps a group alive, so the shard is not orphaned
    // and the plugin is alive: lock() cannot fail.
    if (!shard.owner) shard.owner = owner_.lock();
    ++shard.shares;
    return index;
}

void PluginShares::let_go(std::uint32_t index) noexcept {
    std::shared_ptr<Plugin> last;  // dropped after the lock, which lives in the plugin
    Shard& shard = shards_[index];
    std::lock_guard lock(shard.mu);
    if (--shard.shares == 0 && shard.orphaned) last = std::move(shard.owner);
}

void PluginShares::handles_gone() noexcept {
    std::lock_guard lock(handles_mu_);
    // A group started since (Event::device()) keeps the shards' references.
    if (!handles_.expired()) return;
    // Dropping a shard's reference here is never the last one: the ending
    // group still holds one.
    for (Shard& shard : shards_) {
        std::lock_guard shard_lock(shard.mu);
        shard.orphaned = true;
        if (shard.shares == 0) shard.owner.reset();
    }
}

}  // namespace keel::detail
