#include "memory/plugin_staging.hpp"

#include "access.hpp"
#include "plugin.hpp"
#include "plugin_api.hpp"

#include <functional>
#include <utility>

namespace keel::memory {

namespace {

using detail::api_of;

// Blocks from the plugin's host_alloc.
class HostAllocMemory final : public staging::PinnedMemory {
public:
    explicit HostAllocMemory(const Device& device) : device_(device) {}
    Result<void*> allocate(std::size_t bytes) override {
        void* block = nullptr;
        KEEL_TRY(api_of(device_).host_alloc(detail::Access::handle(device_), bytes, &block));
        return block;
    }
    void free(void* block) noexcept override {
        (void)api_of(device_).host_free(detail::Access::handle(device_), block);
    }

private:
    const Device& device_;  // PluginStaging's, which outlives the staging
};

// One copy's view of a plugin stream.
class TableStream final : public staging::StagingStream {
public:
    TableStream(const Device& device, keel_stream stream, keel_device_addr device_addr, bool to_device)
        : api_(api_of(device)), stream_(stream), device_addr_(device_addr), to_device_(to_device) {}

    Result<void> enqueue_host_step(Step step) override {
        auto owned = std::make_unique<Step>(std::move(step));
        KEEL_TRY(api_.stream_enqueue_host_func(stream_, &run_step, owned.get()));
        (void)owned.release();  // run_step deletes it
        return ok();
    }
    Result<void> enqueue_device_copy(std::uint64_t offset, void* block, std::size_t bytes) override {
        if (to_device_) return api_.memcpy_h2d(stream_, device_addr_ + offset, block, bytes);
        return api_.memcpy_d2h(stream_, block, device_addr_ + offset, bytes);
    }

private:
    static void run_step(void* user_data, keel_status status) {
        const std::unique_ptr<Step> step(static_cast<Step*>(user_data));
        (*step)(status == KEEL_STATUS_OK);
    }

    const detail::PluginApi& api_;
    keel_stream stream_;
    keel_device_addr device_addr_;
    bool to_device_;
};

}  // namespace

std::unique_ptr<PluginStaging> PluginStaging::for_device(const Device& device, const StagingConfig& config) {
    const detail::PluginApi& api = api_of(device);
    if (api.abi_minor() < 3 || !device.has(DeviceCapability::pinned_copies_only) || !api.has_host_alloc())
        return nullptr;
    return std::make_unique<PluginStaging>(device, config);
}

PluginStaging::PluginStaging(Device device, const StagingConfig& config)
    : device_(std::move(device)), staging_(std::make_unique<HostAllocMemory>(device_), config) {}

Result<void> PluginStaging::to_device(keel_stream stream, keel_device_addr dst, const void* src,
                                      std::uint64_t size) {
    TableStream port(device_, stream, dst, true);
    return staging_.to_device(port, src, size);
}

Result<void> PluginStaging::to_host(keel_stream stream, void* dst, keel_device_addr src, std::uint64_t size) {
    TableStream port(device_, stream, src, false);
    return staging_.to_host(port, dst, size);
}

}  // namespace keel::memory
