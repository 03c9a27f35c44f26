// Staging of pageable host memory for a device that declares
// KEEL_DEVICE_CAP_PINNED_COPIES_ONLY (keel.h 1.3): the plugin's copies take
// only memory from its host_alloc, so the runtime runs keel::staging's
// PageableStaging over the plugin's own entries: host steps are host
// functions on the stream, device copies are memcpy_h2d/memcpy_d2h from
// pinned blocks of host_alloc. The same engine keel's CUDA and Level Zero
// plugins link.
//
// Sync (PageableStaging is). The steps call no plugin entry (keel_host_fn
// must not), only memcpy between pageable memory and blocks.
#pragma once

#include <keel/device.hpp>
#include <keel/result.hpp>
#include <keel/staging/pageable_staging.hpp>

#include <cstdint>
#include <memory>

namespace keel::memory {

class PluginStaging {
public:
    // Null when the device does not need it: no PINNED_COPIES_ONLY, a plugin
    // of a minor before 1.3, or no host_alloc. `config` is the MemoryPool's
    // (the environment already applied): its `pageable` fields and
    // copy_threads.
    [[nodiscard]] static std::unique_ptr<PluginStaging> for_device(const Device& device, const StagingConfig& config);

    PluginStaging(Device device, const StagingConfig& config);
    PluginStaging(const PluginStaging&) = delete;
    PluginStaging& operator=(const PluginStaging&) = delete;

    [[nodiscard]] Result<void> to_device(keel_stream stream, keel_device_addr dst, const void* src,
                                         std::uint64_t size);
    [[nodiscard]] Result<void> to_host(keel_stream stream, void* dst, keel_device_addr src, std::uint64_t size);

private:
    Device device_;  // keeps the plugin loaded while blocks from its host_alloc exist
    staging::PageableStaging staging_;  // after device_: released first
};

}  // namespace keel::memory
