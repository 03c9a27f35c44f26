// One Level Zero GPU as keel sees it: its handles, fixed properties and
// limits, and the per-device pools every stream draws from.
#pragma once

#include "event_slots.hpp"
#include "host_buffers.hpp"
#include "ipc_addresses.hpp"
#include "modules.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>
#include <keel/staging/config.hpp>
#include <keel/staging/pageable_staging.hpp>

#include <level_zero/ze_api.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace keel::level_zero {

// One driver and the context keel creates on it, shared by its devices
// (memory from zeMemAllocHost belongs to the context, not to a device).
// Intel's zexMemGetIpcHandles (extension "ZEX_mem_ipc_handles"): how many
// memory objects, each with its own descriptor, one allocation is made of.
using IpcHandlesFunction = ze_result_t(ZE_APICALL*)(ze_context_handle_t, const void*, uint32_t*,
                                                    ze_ipc_mem_handle_t*);

class DriverContext {
public:
    DriverContext(ze_driver_handle_t driver, ze_context_handle_t context, IpcHandlesFunction ipc_handles) noexcept
        : driver_(driver), context_(context), ipc_handles_(ipc_handles) {}
    DriverContext(const DriverContext&) = delete;
    DriverContext& operator=(const DriverContext&) = delete;
    DriverContext(DriverContext&&) = delete;
    DriverContext& operator=(DriverContext&&) = delete;
    ~DriverContext() = default;  // destroy() at plugin_shutdown: no Level Zero call here

    [[nodiscard]] ze_driver_handle_t driver() const noexcept { return driver_; }
    [[nodiscard]] ze_context_handle_t context() const noexcept { return context_; }
    // Null where the driver does not offer zexMemGetIpcHandles.
    [[nodiscard]] IpcHandlesFunction ipc_handles() const noexcept { return ipc_handles_; }
    // zeContextDestroy, which also frees allocations the caller leaked.
    void destroy() noexcept;

private:
    const ze_driver_handle_t driver_;
    const ze_context_handle_t context_;
    const IpcHandlesFunction ipc_handles_;
};

// What the plugin needs to know about a device beyond keel's properties.
struct DeviceLimits {
    std::uint32_t compute_ordinal = 0;  // a command queue group that supports compute
    std::uint32_t compute_queues = 1;   // queues in that group
    std::uint64_t timer_hz = 0;         // timestamp ticks per second (0: no timing)
    std::uint64_t kernel_timestamp_mask = ~0ull;  // the bits of a kernel timestamp that count
    std::uint32_t group_size = 1;       // work-items per group of our 1-D kernels
    std::uint32_t max_group_count = 1;
    std::uint32_t max_kernel_args = 0;  // bytes (maxArgumentsSize)
    bool spirv = false;                 // accepts SPIR-V modules
    bool fp64 = false;                  // ZE_DEVICE_MODULE_FLAG_FP64
};

// Shared by every thread through keel_device handles; every member is
// thread-safe (properties and limits are immutable).
class Device {
public:
    Device(std::uint32_t index, DriverContext& driver, ze_device_handle_t handle,
           const keel_device_properties& properties, const DeviceLimits& limits,
           const StagingConfig& staging_config);
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;
    Device(Device&&) = delete;
    Device& operator=(Device&&) = delete;
    ~Device() = default;

    [[nodiscard]] std::uint32_t index() const noexcept { return index_; }
    // keel's name of the device, "level_zero:0", for messages.
    [[nodiscard]] const std::string& label() const noexcept { return label_; }
    [[nodiscard]] const keel_device_properties& properties() const noexcept { return properties_; }
    [[nodiscard]] const DeviceLimits& limits() const noexcept { return limits_; }
    [[nodiscard]] ze_device_handle_t handle() const noexcept { return handle_; }
    [[nodiscard]] ze_context_handle_t context() const noexcept { return driver_.context(); }
    [[nodiscard]] const DriverContext& driver() const noexcept { return driver_; }

    [[nodiscard]] EventSlotPool& slots() noexcept { return slots_; }
    // Slots with kernel timestamps, for timing events.
    [[nodiscard]] EventSlotPool& timestamp_slots() noexcept { return timestamp_slots_; }
    [[nodiscard]] HostBufferPool& host_buffers() noexcept { return host_buffers_; }
    // Copies to and from pageable host memory (transfers.hpp).
    [[nodiscard]] staging::PageableStaging& pageable_staging() noexcept { return pageable_staging_; }
    [[nodiscard]] ModuleCache& modules() noexcept { return modules_; }
    // Exportable and imported allocations (ipc_entries.cpp).
    [[nodiscard]] IpcAddresses& ipc() noexcept { return ipc_; }

    // The compute queue a new stream uses: round robin over the group.
    [[nodiscard]] std::uint32_t next_queue_index() noexcept;

    // Destroys modules and pooled events and buffers (plugin_shutdown).
    void release_all() noexcept;

private:
    const std::uint32_t index_;
    const std::string label_;
    DriverContext& driver_;
    const ze_device_handle_t handle_;
    const keel_device_properties properties_;
    const DeviceLimits limits_;
    std::atomic<std::uint32_t> next_queue_{0};
    EventSlotPool slots_;
    EventSlotPool timestamp_slots_;
    HostBufferPool host_buffers_;
    staging::PageableStaging pageable_staging_;
    ModuleCache modules_;
    IpcAddresses ipc_;
};

// What discovery found: drivers with a context, their GPUs, and why there
// are none (or which were skipped), in Level Zero's words.
struct Discovery {
    std::vector<std::unique_ptr<DriverContext>> drivers;
    std::vector<std::unique_ptr<Device>> devices;
    std::string status;
};

// Opens the loader, initialises Level Zero for GPUs and lists the GPU
// devices of every driver. Never fails: no loader, no driver or no GPU gives
// zero devices and a status saying which, e.g.
//   "no Level Zero driver: zeInit: ZE_RESULT_ERROR_UNINITIALIZED (...)"
[[nodiscard]] Discovery discover_devices();

}  // namespace keel::level_zero
