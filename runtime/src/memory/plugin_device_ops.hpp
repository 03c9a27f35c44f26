// DeviceOps over a loaded plugin, through the runtime's table wrapper (which
// refuses calls from host functions and answers UNIMPLEMENTED for absent
// optional entries). The memory machinery's only contact with a real device;
// generic: it calls table entries, never a vendor API.
#pragma once

#include <keel/device.hpp>
#include "memory/device_ops.hpp"
#include "memory/plugin_staging.hpp"

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace keel::memory {

// Sync, as the ABI's entries are. Holds a Device, which keeps the plugin
// loaded for the object's life.
class PluginDeviceOps final : public DeviceOps {
public:
    // `staging`: the MemoryPool's, for a device that copies only pinned memory.
    PluginDeviceOps(Device device, const StagingConfig& staging);
    PluginDeviceOps(const PluginDeviceOps&) = delete;
    PluginDeviceOps& operator=(const PluginDeviceOps&) = delete;
    PluginDeviceOps(PluginDeviceOps&&) = delete;
    PluginDeviceOps& operator=(PluginDeviceOps&&) = delete;
    ~PluginDeviceOps() override;

    std::uint64_t alloc_alignment() const noexcept override { return alignment_; }
    std::uint64_t total_memory() const noexcept override { return total_memory_; }
    bool has_pinned_host_memory() const noexcept override { return has_host_alloc_; }
    bool has_inline_copy() const noexcept override { return has_inline_; }

    Result<keel_device_addr> device_alloc(std::uint64_t size) override;
    Result<void> device_free(keel_device_addr addr) override;
    Result<void*> host_alloc(std::uint64_t size) override;
    Result<void> host_free(void* ptr) override;
    Result<keel_event> event_create() override;
    Result<void> event_destroy(keel_event event) override;
    Result<void> event_record(keel_event event, keel_stream stream) override;
    Result<bool> event_query(keel_event event) override;
    Result<void> event_synchronize(keel_event event) override;
    Result<void> stream_wait_event(keel_stream stream, keel_event event) override;
    Result<void> stream_synchronize(keel_stream stream) override;
    Result<bool> stream_query(keel_stream stream) override;
    Result<void> memcpy_h2d(keel_stream stream, keel_device_addr dst, const void* src,
                            std::uint64_t size) override;
    Result<void> memcpy_d2h(keel_stream stream, void* dst, keel_device_addr src,
                            std::uint64_t size) override;
    Result<void> pageable_h2d(keel_stream stream, keel_device_addr dst, const void* src,
                              std::uint64_t size) override;
    Result<void> pageable_d2h(keel_stream stream, void* dst, keel_device_addr src, std::uint64_t size) override;
    Result<void> memcpy_h2d_inline(keel_stream stream, keel_device_addr dst, const void* src,
                                   std::uint64_t size) override;
    Result<void> memset_d8(keel_stream stream, keel_device_addr dst, std::uint8_t value,
                           std::uint64_t size) override;
    // Through the plugin's stream_annotate_range (ABI 1.3; absent: nothing
    // to tell).
    Result<void> annotate(BlockEvent what, keel_stream stream, keel_device_addr addr,
                          std::uint64_t size) override;

private:
    const Device device_;
    const keel_device handle_;
    std::uint64_t alignment_ = 256;
    std::uint64_t total_memory_ = 0;
    bool has_host_alloc_ = false;
    bool has_inline_ = false;
    // Null unless the device takes only pinned memory in its copies.
    std::unique_ptr<PluginStaging> staging_;

    // Ordinary host memory standing in for pinned memory when the plugin
    // has no host_alloc (the ABI says the runtime then stages through it).
    std::mutex host_mu_;
    std::unordered_map<void*, std::unique_ptr<std::byte[]>> host_blocks_;
};

}  // namespace keel::memory
