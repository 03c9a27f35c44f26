#include <keel/base/no_destructor.hpp>

#include <keel/memory_pool.hpp>
#include <keel/environment.hpp>
#include <keel/staging/config.hpp>

#include "access.hpp"

#include "memory/plugin_device_ops.hpp"
#include "memory/shared_memory.hpp"
#include "memory/stream_registry.hpp"
#include "plugin.hpp"
#include "trace/history.hpp"

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <system_error>
#include <unordered_map>

namespace keel {

namespace memory {

namespace {

// The device's shared instance, weakly: it lives while something uses it,
// so none outlives its users into static destruction. The configuration it
// was given outlives it, so that an instance created later honours it.
struct SharedEntry {
    std::weak_ptr<const detail::DeviceSlot> device;  // expired: a stale entry
    std::weak_ptr<MemoryCore> core;  // MemoryCore::lifetime(): alive while handles or buffers are
    std::optional<MemoryConfig> config;
};

struct SharedInstances {
    std::mutex mu;
    std::unordered_map<const detail::DeviceSlot*, SharedEntry> entries;  // guarded by mu
};

SharedInstances& shared_instances() {
    static base::NoDestructor<SharedInstances> r;  // cores are released at exit too
    return *r;
}

// Sizes the machinery rounds up (to a power of two, or to the rounding
// quantum) must leave room for it: a larger one would wrap.
constexpr std::uint64_t kLargestRoundedSize = std::uint64_t{1} << 62;

Result<void> check_config(const Device& device, const MemoryConfig& config) {
    const std::pair<const char*, std::uint64_t> rounded[] = {
        {"allocator.rounding", config.allocator.rounding},
        {"allocator.small_size_limit", config.allocator.small_size_limit},
        {"allocator.small_segment_size", config.allocator.small_segment_size},
        {"allocator.large_segment_size", config.allocator.large_segment_size},
        {"allocator.large_rounding", config.allocator.large_rounding},
        {"staging.chunk_bytes", config.staging.chunk_bytes},
    };
    for (const auto& [field, value] : rounded)
        if (value > kLargestRoundedSize)
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         std::string("[MemoryPool] MemoryConfig::") + field + " of " + std::to_string(value) +
                             " bytes for " + device.name() + " is larger than the largest usable, " +
                             std::to_string(kLargestRoundedSize) + " bytes");
    return ok();
}

}  // namespace

// The code's configuration with the environment applied (README.md,
// "Settings": a variable that is set overrides the field it names).
Result<MemoryConfig> with_environment(MemoryConfig config) {
    KEEL_TRY_ASSIGN(const std::optional<bool> check, env::flag(env::Var::check));
    if (check) config.allocator.checked = *check;
    KEEL_TRY_ASSIGN(const std::optional<bool> no_caching, env::flag(env::Var::no_caching));
    if (no_caching) config.allocator.caching = !*no_caching;
    KEEL_TRY_ASSIGN(config.staging, staging::with_environment(config.staging));
    return config;
}

Result<std::shared_ptr<MemoryCore>> create_core(const Device& device, const MemoryConfig& code_config) {
    KEEL_TRY_ASSIGN(const MemoryConfig config, with_environment(code_config));
    KEEL_TRY(check_config(device, config));
    try {
        return MemoryCore::create(std::make_unique<PluginDeviceOps>(device, config.staging), config,
                                  &detail::Access::slot(device));
    } catch (const std::bad_alloc&) {
        return Error(KEEL_STATUS_OUT_OF_MEMORY,
                     "[MemoryPool] host allocation failed creating " + device.name() + "'s memory");
    } catch (const std::system_error& e) {
        return Error(KEEL_STATUS_INTERNAL,
                     "[MemoryPool] cannot start " + device.name() + "'s reclaimer thread: " + e.what());
    }
}

Result<std::shared_ptr<MemoryCore>> shared_core(const Device& device, const MemoryConfig* code_config) {
    std::optional<MemoryConfig> effective;
    if (code_config != nullptr) {
        KEEL_TRY_ASSIGN(effective, with_environment(*code_config));
        KEEL_TRY(check_config(device, *effective));  // before it is remembered
    }
    const MemoryConfig* config = effective ? &*effective : nullptr;
    SharedInstances& r = shared_instances();
    std::lock_guard lock(r.mu);
    // Entries of devices whose plugin is gone (their address may be reused).
    std::erase_if(r.entries, [](const auto& e) { return e.second.device.expired(); });
    const std::shared_ptr<const detail::DeviceSlot>& slot = detail::Access::slot_ptr(device);
    SharedEntry& entry = r.entries[slot.get()];
    entry.device = slot;
    if (std::shared_ptr<MemoryCore> existing = entry.core.lock()) {
        if (config != nullptr && !(existing->config() == *config))
            return Error(KEEL_STATUS_FAILED_PRECONDITION,
                         "[MemoryPool::shared] " + device.name() +
                             "'s shared memory already exists with another configuration; give it "
                             "its configuration before its first buffer, staged copy, hold or fence "
                             "(or use MemoryPool::create for a private instance)");
        try {
            return MemoryCore::share(existing);  // its buffers may have outlived every handle
        } catch (const std::bad_alloc&) {
            return Error(KEEL_STATUS_OUT_OF_MEMORY, "[MemoryPool] host allocation failed sharing " +
                                                        device.name() + "'s memory");
        }
    }
    if (config != nullptr) entry.config = *config;
    KEEL_TRY_ASSIGN(std::shared_ptr<MemoryCore> created,
                    create_core(device, entry.config.value_or(MemoryConfig{})));
    entry.core = created->lifetime();
    return created;
}

}  // namespace memory

Result<MemoryPool> MemoryPool::shared(const Device& device) {
    KEEL_TRY_ASSIGN(auto core, memory::shared_core(device, nullptr));
    return MemoryPool(device, std::move(core));
}

Result<MemoryPool> MemoryPool::shared(const Device& device, const MemoryConfig& config) {
    KEEL_TRY_ASSIGN(auto core, memory::shared_core(device, &config));
    return MemoryPool(device, std::move(core));
}

Result<MemoryPool> MemoryPool::create(const Device& device, const MemoryConfig& config) {
    KEEL_TRY_ASSIGN(auto core, memory::create_core(device, config));
    return MemoryPool(device, std::move(core));
}

const MemoryConfig& MemoryPool::config() const noexcept { return core_->config(); }
void MemoryPool::sweep() const noexcept { core_->tracker().sweep_and_settle(); }
void MemoryPool::synchronize() const noexcept { core_->tracker().drain(); }
Result<void> MemoryPool::release_cached() const { return core_->allocator().release_cached(); }
AllocatorStats MemoryPool::stats() const { return core_->allocator().stats(); }
MemorySnapshot MemoryPool::snapshot() const {
    MemorySnapshot snap = core_->allocator().snapshot();
    if (core_->device() != nullptr) snap.device = core_->device()->name;
    const bool tagged = trace::history_kept();
    for (SegmentSnapshot& segment : snap.segments) {
        if (segment.stream != nullptr) segment.stream_id = memory::stream_generation(segment.stream);
        if (!tagged) continue;
        for (BlockSnapshot& block : segment.blocks)
            if (block.state == BlockState::allocated)
                block.tag = trace::allocation_tag(&core_->allocator(), block.addr);
    }
    return snap;
}
StagingStats MemoryPool::staging_stats() const { return core_->staging().stats(); }
TrackerStats MemoryPool::tracker_stats() const { return core_->tracker().stats(); }
void MemoryPool::reset_peaks() const noexcept { core_->allocator().reset_peaks(); }

}  // namespace keel
