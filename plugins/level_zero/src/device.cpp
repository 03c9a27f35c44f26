#include "device.hpp"

#include "transfers.hpp"
#include "ze_error.hpp"
#include "ze_loader.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace keel::level_zero {

namespace {

// The ABI promises one alignment for every device_alloc; zeMemAllocDevice
// honours any power of two asked for.
constexpr std::uint64_t kAllocAlignment = 256;
// Work-items per group of the plugin's kernels, and the most groups one
// launch uses (the kernels loop over whatever remains).
constexpr std::uint32_t kGroupSize = 256;
constexpr std::uint32_t kMaxGroups = 65536;

void copy_text(char* out, std::size_t capacity, const char* text) {
    const std::size_t n = std::min(std::strlen(text), capacity - 1);
    std::memcpy(out, text, n);
    out[n] = '\0';
}

std::string device_type_name(ze_device_type_t type) {
    switch (type) {
        case ZE_DEVICE_TYPE_GPU: return "GPU";
        case ZE_DEVICE_TYPE_CPU: return "CPU";
        case ZE_DEVICE_TYPE_FPGA: return "FPGA";
        case ZE_DEVICE_TYPE_MCA: return "MCA";
        case ZE_DEVICE_TYPE_VPU: return "VPU";
        default: return "type " + std::to_string(static_cast<int>(type));
    }
}

void add_note(std::string& status, const std::string& note) {
    if (!status.empty()) status += "; ";
    status += note;
}

// What every driver shares between processes.
struct IpcSupport {
    bool memory = false;
    bool events = false;
};

// Everything keel needs about one device, or why it cannot be used.
Result<void> describe(ze_driver_handle_t driver, ze_device_handle_t device, const ze_device_properties_t& props,
                      IpcSupport ipc, keel_device_properties& out, DeviceLimits& limits) {
    ze_api_version_t version = ZE_API_VERSION_1_0;
    KEEL_TRY(KEEL_ZE(zeDriverGetApiVersion, driver, &version).check());

    uint32_t groups = 0;
    KEEL_TRY(KEEL_ZE(zeDeviceGetCommandQueueGroupProperties, device, &groups, nullptr).check());
    std::vector<ze_command_queue_group_properties_t> group_props(groups);
    for (auto& g : group_props)
        g = ze_struct<ze_command_queue_group_properties_t>(ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES);
    KEEL_TRY(KEEL_ZE(zeDeviceGetCommandQueueGroupProperties, device, &groups, group_props.data()).check());
    bool compute = false;
    for (uint32_t i = 0; i < groups && !compute; ++i) {
        if ((group_props[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) == 0) continue;
        compute = true;
        limits.compute_ordinal = i;
        limits.compute_queues = std::max<uint32_t>(1, group_props[i].numQueues);
    }
    if (!compute) return Error(KEEL_STATUS_UNAVAILABLE, "it has no command queue group that supports compute");

    auto compute_props = ze_struct<ze_device_compute_properties_t>(ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES);
    KEEL_TRY(KEEL_ZE(zeDeviceGetComputeProperties, device, &compute_props).check());
    limits.group_size = std::max<uint32_t>(
        1, std::min({kGroupSize, compute_props.maxGroupSizeX, compute_props.maxTotalGroupSize}));
    limits.max_group_count = std::max<uint32_t>(1, std::min(kMaxGroups, compute_props.maxGroupCountX));

    auto module_props = ze_struct<ze_device_module_properties_t>(ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES);
    KEEL_TRY(KEEL_ZE(zeDeviceGetModuleProperties, device, &module_props).check());
    limits.spirv = module_props.spirvVersionSupported != 0;
    limits.fp64 = (module_props.flags & ZE_DEVICE_MODULE_FLAG_FP64) != 0;
    limits.max_kernel_args = module_props.maxArgumentsSize;

    uint32_t memories = 0;
    KEEL_TRY(KEEL_ZE(zeDeviceGetMemoryProperties, device, &memories, nullptr).check());
    std::vector<ze_device_memory_properties_t> memory_props(memories);
    for (auto& m : memory_props) m = ze_struct<ze_device_memory_properties_t>(ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES);
    KEEL_TRY(KEEL_ZE(zeDeviceGetMemoryProperties, device, &memories, memory_props.data()).check());
    std::uint64_t total = 0;
    for (const auto& m : memory_props) total += m.totalSize;

    // Since API 1.2 the resolution is in cycles per second when asked for
    // with the _1_2 structure type; before, in nanoseconds per cycle.
    if (props.timerResolution != 0)
        limits.timer_hz = version >= ZE_API_VERSION_1_2 ? props.timerResolution
                                                        : std::max<std::uint64_t>(1, 1000000000ull / props.timerResolution);
    // Kernel timestamps count the same timer in fewer bits (often 32).
    limits.kernel_timestamp_mask = props.kernelTimestampValidBits >= 64 || props.kernelTimestampValidBits == 0
                                       ? ~0ull
                                       : (1ull << props.kernelTimestampValidBits) - 1;

    out = {};
    out.struct_size = KEEL_DEVICE_PROPERTIES_STRUCT_SIZE;
    copy_text(out.name, sizeof out.name, props.name);
    if (props.vendorId == 0x8086) {
        copy_text(out.vendor, sizeof out.vendor, "Intel");
    } else {
        char vendor[32];
        std::snprintf(vendor, sizeof vendor, "PCI vendor 0x%04x", props.vendorId);
        copy_text(out.vendor, sizeof out.vendor, vendor);
    }
    out.total_memory = total;
    // Not HOST_ADDRESSABLE: zeMemAllocDevice memory is not host-accessible.
    // Streams are separate immediate command lists, which run concurrently.
    out.capabilities = KEEL_DEVICE_CAP_PINNED_MEMORY | KEEL_DEVICE_CAP_CONCURRENT_STREAMS;
    if (limits.timer_hz != 0) out.capabilities |= KEEL_DEVICE_CAP_EVENT_TIMING;
    if (ipc.memory) out.capabilities |= KEEL_DEVICE_CAP_IPC_MEMORY;
    if (ipc.events) out.capabilities |= KEEL_DEVICE_CAP_IPC_EVENTS;
    out.compute_units = props.numSlices * props.numSubslicesPerSlice * props.numEUsPerSubslice;
    out.max_allocation = std::min(props.maxMemAllocSize, total);
    out.alloc_alignment = kAllocAlignment;
    return ok();
}

// The GPUs of one driver, with a context; notes what was skipped.
void discover_driver(ze_driver_handle_t driver, std::uint32_t driver_index, IpcSupport ipc,
                     const StagingConfig& staging_config, Discovery& found) {
    const std::string which = "Level Zero driver " + std::to_string(driver_index);
    uint32_t count = 0;
    if (const ZeCall c = KEEL_ZE(zeDeviceGet, driver, &count, nullptr); !c.ok()) {
        add_note(found.status, which + " skipped: " + c.error().message());
        return;
    }
    std::vector<ze_device_handle_t> handles(count);
    if (const ZeCall c = KEEL_ZE(zeDeviceGet, driver, &count, handles.data()); !c.ok()) {
        add_note(found.status, which + " skipped: " + c.error().message());
        return;
    }
    DriverContext* context = nullptr;
    for (ze_device_handle_t handle : handles) {
        auto props = ze_struct<ze_device_properties_t>(ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2);
        if (const ZeCall c = KEEL_ZE(zeDeviceGetProperties, handle, &props); !c.ok()) {
            add_note(found.status, "a device of " + which + " skipped: " + c.error().message());
            continue;
        }
        if (props.type != ZE_DEVICE_TYPE_GPU) {
            add_note(found.status, std::string("'") + props.name + "' skipped: a " +
                                       device_type_name(props.type) + ", not a GPU");
            continue;
        }
        keel_device_properties keel_props{};
        DeviceLimits limits;
        if (Result<void> r = describe(driver, handle, props, ipc, keel_props, limits); !r.ok()) {
            add_note(found.status, std::string("'") + props.name + "' skipped: " + r.error().message());
            continue;
        }
        if (context == nullptr) {
            ze_context_desc_t desc{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
            ze_context_handle_t raw = nullptr;
            if (const ZeCall c = KEEL_ZE(zeContextCreate, driver, &desc, &raw); !c.ok()) {
                add_note(found.status, which + " skipped: " + c.error().message());
                return;
            }
            void* ipc_handles = nullptr;  // stays null where the driver lacks the extension
            if (!KEEL_ZE(zeDriverGetExtensionFunctionAddress, driver, "zexMemGetIpcHandles", &ipc_handles).ok())
                ipc_handles = nullptr;
            found.drivers.push_back(std::make_unique<DriverContext>(
                driver, raw, reinterpret_cast<IpcHandlesFunction>(ipc_handles)));
            context = found.drivers.back().get();
        }
        const auto index = static_cast<std::uint32_t>(found.devices.size());
        found.devices.push_back(std::make_unique<Device>(index, *context, handle, keel_props, limits,
                                                          staging_config));
    }
}

}  // namespace

void DriverContext::destroy() noexcept { (void)ze().zeContextDestroy(context_); }

Device::Device(std::uint32_t index, DriverContext& driver, ze_device_handle_t handle,
               const keel_device_properties& properties, const DeviceLimits& limits,
               const StagingConfig& staging_config)
    : index_(index),
      label_("level_zero:" + std::to_string(index)),
      driver_(driver),
      handle_(handle),
      properties_(properties),
      limits_(limits),
      slots_(driver.context(), handle, SlotKind::plain),
      timestamp_slots_(driver.context(), handle, SlotKind::kernel_timestamp),
      host_buffers_(driver.context()),
      pageable_staging_(ze_pinned_memory(driver.context()), staging_config),
      modules_(driver.context(), handle, limits) {}

std::uint32_t Device::next_queue_index() noexcept {
    return next_queue_.fetch_add(1, std::memory_order_relaxed) % limits_.compute_queues;
}

void Device::release_all() noexcept {
    modules_.release_all();
    slots_.release_all();
    timestamp_slots_.release_all();
    host_buffers_.release_all();
    pageable_staging_.release_all();
}

Discovery discover_devices() {
    Discovery found;
    if (Result<void> opened = open_loader(); !opened.ok()) {
        found.status = opened.error().message();
        return found;
    }
    // GPU drivers only; other device types (NPUs) are not keel devices here.
    if (const ZeCall c = KEEL_ZE(zeInit, ZE_INIT_FLAG_GPU_ONLY); !c.ok()) {
        found.status = "no Level Zero driver: " + c.error().message() +
                       " (the loader found no usable GPU driver, such as Intel's compute runtime)";
        return found;
    }
    uint32_t count = 0;
    if (const ZeCall c = KEEL_ZE(zeDriverGet, &count, nullptr); !c.ok() || count == 0) {
        found.status = "no Level Zero driver: " +
                       (c.ok() ? std::string("zeDriverGet found none") : c.error().message());
        return found;
    }
    std::vector<ze_driver_handle_t> drivers(count);
    if (const ZeCall c = KEEL_ZE(zeDriverGet, &count, drivers.data()); !c.ok()) {
        found.status = "no Level Zero driver: " + c.error().message();
        return found;
    }
    // A staging setting that does not parse leaves no device, saying why.
    const Result<StagingConfig> staging_config = staging::with_environment(StagingConfig{});
    if (!staging_config.ok()) {
        found.status = staging_config.error().message();
        return found;
    }
    // Memory and event IPC only where every driver offers them: the plugin's
    // ipc_memory_* and ipc_event_* entries come exactly with the capabilities
    // (keel.h's ipc.memory-set and ipc.event-set).
    IpcSupport ipc{true, true};
    for (ze_driver_handle_t driver : drivers) {
        auto props = ze_struct<ze_driver_ipc_properties_t>(ZE_STRUCTURE_TYPE_DRIVER_IPC_PROPERTIES);
        const bool known = KEEL_ZE(zeDriverGetIpcProperties, driver, &props).ok();
        ipc.memory = ipc.memory && known && (props.flags & ZE_IPC_PROPERTY_FLAG_MEMORY) != 0;
        ipc.events = ipc.events && known && (props.flags & ZE_IPC_PROPERTY_FLAG_EVENT_POOL) != 0;
    }
    for (std::uint32_t i = 0; i < count; ++i) discover_driver(drivers[i], i, ipc, *staging_config, found);
    if (found.devices.empty()) {
        const std::string why = found.status;
        found.status = "no Level Zero GPU";
        if (!why.empty()) found.status += ": " + why;
    }
    return found;
}

}  // namespace keel::level_zero
