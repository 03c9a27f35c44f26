// One CUDA device as keel sees it: its ordinal, its fixed properties, the
// idle streams and events kept for reuse, and its live allocations.
#pragma once

#include "allocation_registry.hpp"
#include "handle_pool.hpp"

#include <keel/staging/config.hpp>
#include <keel/staging/pageable_staging.hpp>

#include <memory>
#include <mutex>

#include <keel/keel.h>
#include <keel/result.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace keel::cuda {

// Makes `ordinal` the calling thread's current CUDA device. Every entry that
// needs a device calls it, so keel never depends on a current device the
// caller may or may not have set. Cheap when it is already current (one
// thread-local read). It does not restore the previous device: restoring
// could create a context on a GPU keel was never asked to touch.
[[nodiscard]] Result<void> make_current(int ordinal);

// For the calls CUDA accepts whatever device is current (copies, event
// record and wait: CUDA C Programming Guide, "Stream and Event Behavior"):
// makes `ordinal` current only on the calling thread's first keel call, so
// that CUDA's lazy initialisation never picks device 0's context for it,
// and afterwards costs one thread-local read (no cudaGetDevice per enqueue).
[[nodiscard]] Result<void> ensure_context(int ordinal);

// Shared by every thread through keel_device handles; every member is
// thread-safe (the properties are immutable after construction).
class Device {
public:
    // `index` is keel's ("cuda:<index>"), `ordinal` CUDA's; they differ only
    // when a device before this one could not be queried.
    Device(std::uint32_t index, int ordinal, const cudaDeviceProp& prop,
           const StagingConfig& staging_config);
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;
    Device(Device&&) = delete;
    Device& operator=(Device&&) = delete;
    ~Device() = default;

    [[nodiscard]] int ordinal() const noexcept { return ordinal_; }
    // keel's index: the N of "cuda:N".
    [[nodiscard]] std::uint32_t index() const noexcept { return index_; }
    // keel's name of the device, "cuda:0", for messages.
    [[nodiscard]] const std::string& label() const noexcept { return label_; }
    [[nodiscard]] const keel_device_properties& properties() const noexcept { return properties_; }
    [[nodiscard]] std::uint32_t sm_count() const noexcept { return properties_.compute_units; }

    // cuda::make_current for this device. The first time in the process it
    // also loads the plugin's kernels on it (kernel_preload.hpp): every keel
    // entry reaches this before keel has a stream on the device (the first
    // stream_create finds the stream pool empty and makes the device current).
    [[nodiscard]] Result<void> make_current() const;
    // cuda::ensure_context, loading the kernels as make_current does.
    [[nodiscard]] Result<void> ensure_context() const;

    [[nodiscard]] AllocationRegistry& allocations() noexcept { return allocations_; }
    // Pinned host memory from host_alloc on this device, so host_free can
    // refuse what it did not allocate and shutdown can free what leaked.
    [[nodiscard]] AllocationRegistry& pinned() noexcept { return pinned_; }
    // Copies to and from pageable host memory: pinned blocks and the host
    // threads that copy between them and pageable memory (keel::staging,
    // whose copy pool the runtime stages with too).
    [[nodiscard]] staging::PageableStaging& pageable_staging() noexcept { return pageable_staging_; }
    // Idle non-blocking streams, synchronised before they were pooled.
    [[nodiscard]] HandlePool<cudaStream_t>& idle_streams() noexcept { return idle_streams_; }
    // Idle events whose last record (if any) has completed.
    [[nodiscard]] HandlePool<cudaEvent_t>& idle_events(bool timing) noexcept {
        return timing ? idle_timing_events_ : idle_events_;
    }

    // Destroys pooled handles and frees allocations the caller leaked. At
    // plugin_shutdown only; best effort (CUDA may already be unloading).
    void release_all() noexcept;

private:
    const std::uint32_t index_;
    const int ordinal_;
    const std::string label_;
    mutable std::once_flag kernels_loaded_;
    keel_device_properties properties_{};
    AllocationRegistry allocations_;
    AllocationRegistry pinned_;
    staging::PageableStaging pageable_staging_;
    HandlePool<cudaStream_t> idle_streams_;
    HandlePool<cudaEvent_t> idle_events_;
    HandlePool<cudaEvent_t> idle_timing_events_;
};

// What device discovery found: the usable devices, and why there are none
// (or which were skipped) in words for plugin_info's status.
struct Discovery {
    std::vector<std::unique_ptr<Device>> devices;
    std::string status;
};

// Asks the CUDA runtime for devices. Never fails: no driver or no GPU gives
// zero devices and a status quoting CUDA's error name and message.
[[nodiscard]] Discovery discover_devices();

}  // namespace keel::cuda
