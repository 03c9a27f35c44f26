// The driver, its devices and contexts; failure injection and the control API.
#include "api.hpp"
#include "fake.hpp"

#include <fake_ze/control.h>
#include <keel/base/no_destructor.hpp>
#include <keel/environment.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>

namespace fake_ze {

namespace {

struct Injection {
    std::string function;
    ze_result_t result;
    std::uint32_t skip;
    std::uint32_t count;
};

std::mutex g_injection_mutex;
std::vector<Injection> g_injections;  // guarded by g_injection_mutex
std::atomic<bool> g_any_injection{false};

// A setting that does not parse ends the process: the fake is a test's
// instrument, and a test run with it set wrong would prove nothing.
[[noreturn]] void bad_setting(const char* name, std::string_view value, const char* accepts) {
    std::fprintf(stderr, "fake Level Zero driver: environment variable %s='%.*s': expected %s\n", name,
                 static_cast<int>(value.size()), value.data(), accepts);
    std::fflush(stderr);
    std::abort();
}

Config read_config() {
    Config c;
    if (const auto devices = keel::env::foreign("FAKE_ZE_DEVICES")) {
        c.devices.clear();
        std::stringstream list{std::string(*devices)};
        for (std::string type; std::getline(list, type, ',');) {
            if (type == "gpu") c.devices.push_back(ZE_DEVICE_TYPE_GPU);
            else if (type == "vpu") c.devices.push_back(ZE_DEVICE_TYPE_VPU);
            else if (type == "cpu") c.devices.push_back(ZE_DEVICE_TYPE_CPU);
            else bad_setting("FAKE_ZE_DEVICES", *devices, "a comma-separated list of gpu, vpu, cpu");
        }
    }
    if (const auto memory = keel::env::foreign("FAKE_ZE_DEVICE_MEMORY")) {
        const auto bytes = keel::env::parse_integer(*memory, 1, INT64_MAX);
        if (!bytes) bad_setting("FAKE_ZE_DEVICE_MEMORY", *memory, "a byte count >= 1");
        c.memory = static_cast<std::uint64_t>(*bytes);
    }
    if (const auto host = keel::env::foreign("FAKE_ZE_HOST_MEMORY")) {
        const auto bytes = keel::env::parse_integer(*host, 1, INT64_MAX);
        if (!bytes) bad_setting("FAKE_ZE_HOST_MEMORY", *host, "a byte count >= 1");
        c.host_memory = static_cast<std::uint64_t>(*bytes);
    }
    if (const auto order = keel::env::foreign("FAKE_ZE_ORDER")) {
        if (*order == "in_order") c.relaxed = false;
        else if (*order != "relaxed") bad_setting("FAKE_ZE_ORDER", *order, "relaxed|in_order");
    }
    if (const auto no_fp64 = keel::env::foreign("FAKE_ZE_NO_FP64")) {
        const auto on = keel::env::parse_switch(*no_fp64);
        if (!on) bad_setting("FAKE_ZE_NO_FP64", *no_fp64, "1|0|on|off|true|false|yes|no");
        c.fp64 = !*on;
    }
    if (const auto no_ipc = keel::env::foreign("FAKE_ZE_NO_IPC")) {
        const auto on = keel::env::parse_switch(*no_ipc);
        if (!on) bad_setting("FAKE_ZE_NO_IPC", *no_ipc, "1|0|on|off|true|false|yes|no");
        c.ipc = !*on;
    }
    return c;
}

Device* device_of(ze_device_handle_t handle) { return from_handle<Device>(handle); }

void copy_name(char* out, std::size_t capacity, const std::string& name) {
    const std::size_t n = std::min(name.size(), capacity - 1);
    std::memcpy(out, name.data(), n);
    out[n] = '\0';
}

}  // namespace

void violation(const std::string& what) {
    std::fprintf(stderr, "fake Level Zero driver: the caller broke the Level Zero specification: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

ze_result_t injected(const char* function) {
    if (!g_any_injection.load(std::memory_order_acquire)) return ZE_RESULT_SUCCESS;
    std::lock_guard lock(g_injection_mutex);
    for (auto it = g_injections.begin(); it != g_injections.end(); ++it) {
        if (it->function != function) continue;
        if (it->skip > 0) {
            --it->skip;
            return ZE_RESULT_SUCCESS;
        }
        const ze_result_t result = it->result;
        if (--it->count == 0) g_injections.erase(it);
        if (g_injections.empty()) g_any_injection.store(false, std::memory_order_release);
        return result;
    }
    return ZE_RESULT_SUCCESS;
}

Driver& Driver::get() {
    // Never destroyed, like a real driver: hosts keep keel objects in
    // globals, which release their events and memory while the process
    // exits, after this library's own statics would have gone.
    static keel::base::NoDestructor<Driver> driver;
    return *driver;
}

namespace {
std::atomic<std::uint64_t> g_timer_offset{0};  // ticks added to the clock's
}

std::uint64_t timer_ticks() noexcept {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count();
    // kTimerHz / 1e9 = 24 / 1250 ticks per nanosecond, floored exactly.
    static_assert(kTimerHz * 1250 == 24 * 1000000000ull);
    const auto n = static_cast<std::uint64_t>(ns);
    return n / 1250 * 24 + n % 1250 * 24 / 1250 + g_timer_offset.load(std::memory_order_relaxed);
}

void Driver::start() {
    std::lock_guard lock(mutex);
    if (!devices.empty()) return;
    config = read_config();
    for (std::size_t i = 0; i < config.devices.size(); ++i) {
        auto d = std::make_unique<Device>();
        d->index = static_cast<std::uint32_t>(i);
        d->type = config.devices[i];
        d->name = "keel fake Level Zero device " + std::to_string(i);
        d->memory = config.memory;
        devices.push_back(std::move(d));
    }
}

bool Driver::lost_for(const Event& event) const {
    if (event.pool->devices.empty())
        return std::any_of(devices.begin(), devices.end(), [](const auto& d) { return d->lost; });
    return std::any_of(event.pool->devices.begin(), event.pool->devices.end(), [](const Device* d) { return d->lost; });
}

Allocation* Driver::holding(std::uint64_t address, std::size_t size) {
    auto it = allocations.upper_bound(address);
    if (it == allocations.begin()) return nullptr;
    --it;
    Allocation* a = it->second.get();
    const std::uint64_t offset = address - a->base;
    if (offset >= a->size && !(offset == 0 && size == 0)) return nullptr;
    return size <= a->size - offset ? a : nullptr;
}

namespace api {

ze_result_t ZE_APICALL zeInit(ze_init_flags_t flags) {
    FAKE_ZE_INJECT("zeInit");
    if (flags > (ZE_INIT_FLAG_GPU_ONLY | ZE_INIT_FLAG_VPU_ONLY)) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    Driver::get().start();
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDriverGet(uint32_t* count, ze_driver_handle_t* drivers) {
    FAKE_ZE_INJECT("zeDriverGet");
    if (count == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (drivers != nullptr && *count > 0) drivers[0] = to_handle<ze_driver_handle_t>(&Driver::get());
    *count = 1;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDriverGetApiVersion(ze_driver_handle_t driver, ze_api_version_t* version) {
    if (driver == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (version == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *version = ZE_API_VERSION_1_4;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDriverGetProperties(ze_driver_handle_t driver, ze_driver_properties_t* props) {
    if (driver == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (props == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    std::memset(&props->uuid, 0x4b, sizeof props->uuid);
    props->driverVersion = 1;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDriverGetIpcProperties(ze_driver_handle_t driver, ze_driver_ipc_properties_t* props) {
    FAKE_ZE_INJECT("zeDriverGetIpcProperties");
    if (driver == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (props == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    props->flags = Driver::get().config.ipc ? ZE_IPC_PROPERTY_FLAG_MEMORY | ZE_IPC_PROPERTY_FLAG_EVENT_POOL : 0;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDriverGetExtensionFunctionAddress(ze_driver_handle_t driver, const char* name,
                                                           void** function) {
    FAKE_ZE_INJECT("zeDriverGetExtensionFunctionAddress");
    if (driver == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (name == nullptr || function == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (std::string(name) == "zexMemGetIpcHandles") {
        *function = reinterpret_cast<void*>(&zexMemGetIpcHandles);
        return ZE_RESULT_SUCCESS;
    }
    *function = nullptr;
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

ze_result_t ZE_APICALL zeDeviceGet(ze_driver_handle_t driver, uint32_t* count, ze_device_handle_t* devices) {
    FAKE_ZE_INJECT("zeDeviceGet");
    if (driver == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (count == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    const auto& all = Driver::get().devices;
    if (devices != nullptr)
        for (std::uint32_t i = 0; i < *count && i < all.size(); ++i) devices[i] = to_handle<ze_device_handle_t>(all[i].get());
    *count = static_cast<uint32_t>(all.size());
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceGetProperties(ze_device_handle_t handle, ze_device_properties_t* props) {
    FAKE_ZE_INJECT("zeDeviceGetProperties");
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (props == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    const Device* d = device_of(handle);
    const ze_structure_type_t stype = props->stype;
    void* next = props->pNext;
    *props = ze_device_properties_t{};
    props->stype = stype;
    props->pNext = next;
    props->type = d->type;
    props->vendorId = 0x8086;
    props->deviceId = 0xfa6e;
    props->coreClockRate = 1000;
    props->maxMemAllocSize = d->memory;
    props->maxHardwareContexts = 64;
    props->numThreadsPerEU = 8;
    props->physicalEUSimdWidth = 8;
    props->numEUsPerSubslice = 8;
    props->numSubslicesPerSlice = 2;
    props->numSlices = 1;
    // The timer (fake.hpp): cycles per second for the 1.2 structure type,
    // nanoseconds per cycle (rounded) for the old one.
    props->timerResolution = stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 ? kTimerHz : (1000000000ull + kTimerHz / 2) / kTimerHz;
    props->timestampValidBits = 64;
    props->kernelTimestampValidBits = kKernelTimestampBits;
    std::memset(props->uuid.id, static_cast<int>(d->index + 1), sizeof props->uuid.id);
    copy_name(props->name, sizeof props->name, d->name);
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceGetComputeProperties(ze_device_handle_t handle, ze_device_compute_properties_t* props) {
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (props == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    props->maxTotalGroupSize = 1024;
    props->maxGroupSizeX = 1024;
    props->maxGroupSizeY = 1024;
    props->maxGroupSizeZ = 64;
    props->maxGroupCountX = 0xffffffffu;
    props->maxGroupCountY = 0xffffffffu;
    props->maxGroupCountZ = 0xffffffffu;
    props->maxSharedLocalMemory = 64 * 1024;
    props->numSubGroupSizes = 2;
    props->subGroupSizes[0] = 16;
    props->subGroupSizes[1] = 32;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceGetModuleProperties(ze_device_handle_t handle, ze_device_module_properties_t* props) {
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (props == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    props->spirvVersionSupported = ZE_MAKE_VERSION(1, 4);
    props->flags = ZE_DEVICE_MODULE_FLAG_FP16 | (Driver::get().config.fp64 ? ZE_DEVICE_MODULE_FLAG_FP64 : 0);
    props->fp16flags = ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST;
    props->fp32flags = ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST | ZE_DEVICE_FP_FLAG_INF_NAN | ZE_DEVICE_FP_FLAG_DENORM;
    props->fp64flags = Driver::get().config.fp64 ? props->fp32flags : 0;
    props->maxArgumentsSize = 2048;  // what Intel GPUs report
    props->printfBufferSize = 4 * 1024 * 1024;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceGetMemoryProperties(ze_device_handle_t handle, uint32_t* count,
                                                   ze_device_memory_properties_t* props) {
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (count == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (props != nullptr && *count > 0) {
        props[0].flags = 0;
        props[0].maxClockRate = 1000;
        props[0].maxBusWidth = 256;
        props[0].totalSize = device_of(handle)->memory;
        copy_name(props[0].name, sizeof props[0].name, "HBM");
    }
    *count = 1;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeDeviceGetCommandQueueGroupProperties(ze_device_handle_t handle, uint32_t* count,
                                                              ze_command_queue_group_properties_t* props) {
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (count == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    // A copy-only group first, so a caller that takes group 0 for kernels fails.
    if (props != nullptr) {
        if (*count > 0) {
            props[0].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
            props[0].maxMemoryFillPatternSize = 4;
            props[0].numQueues = 2;
        }
        if (*count > 1) {
            props[1].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
            props[1].maxMemoryFillPatternSize = 128;
            props[1].numQueues = 4;
        }
    }
    *count = 2;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeContextCreate(ze_driver_handle_t driver, const ze_context_desc_t* desc,
                                       ze_context_handle_t* context) {
    FAKE_ZE_INJECT("zeContextCreate");
    if (driver == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (desc == nullptr || context == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *context = to_handle<ze_context_handle_t>(std::make_unique<Context>().release());
    ++Driver::get().live;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeContextDestroy(ze_context_handle_t handle) {
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    std::unique_ptr<Context> context(from_handle<Context>(handle));
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    if (context->objects != 0)
        violation("zeContextDestroy with " + std::to_string(context->objects) +
                  " command lists, event pools or modules of it still alive");
    // Memory the application did not free goes with its context.
    for (auto it = driver.allocations.begin(); it != driver.allocations.end();) {
        if (it->second->context != context.get()) {
            ++it;
            continue;
        }
        if (it->second->users != 0) violation("zeContextDestroy while a command still uses its memory");
        if (it->second->device && it->second->sharing != Sharing::imported)
            it->second->device->used -= it->second->size;
        it = driver.allocations.erase(it);
        --driver.live;
    }
    --driver.live;
    return ZE_RESULT_SUCCESS;
}

}  // namespace api

}  // namespace fake_ze

using fake_ze::Driver;

extern "C" {

__attribute__((visibility("default"))) void fake_ze_fail_calls(const char* function, ze_result_t result,
                                                               uint32_t skip, uint32_t count) {
    if (function == nullptr || count == 0) return;
    std::lock_guard lock(fake_ze::g_injection_mutex);
    fake_ze::g_injections.push_back({function, result, skip, count});
    fake_ze::g_any_injection.store(true, std::memory_order_release);
}

__attribute__((visibility("default"))) void fake_ze_lose_device(uint32_t index, uint64_t after_commands) {
    Driver& driver = Driver::get();
    driver.start();
    {
        std::lock_guard lock(driver.mutex);
        if (index >= driver.devices.size()) fake_ze::violation("fake_ze_lose_device: no device " + std::to_string(index));
        fake_ze::Device& d = *driver.devices[index];
        if (after_commands == 0) d.lost = true;
        else d.lose_countdown = after_commands;
    }
    driver.changed.notify_all();
}

__attribute__((visibility("default"))) void fake_ze_wrap_kernel_timestamps_in(uint64_t ns) {
    constexpr std::uint64_t mask = (1ull << fake_ze::kKernelTimestampBits) - 1;
    const std::uint64_t then = fake_ze::timer_ticks() + ns * 24 / 1250;
    fake_ze::g_timer_offset.fetch_add((mask + 1 - (then & mask)) & mask);
}

__attribute__((visibility("default"))) uint64_t fake_ze_commands_completed(void) {
    return Driver::get().completed.load();
}

__attribute__((visibility("default"))) uint64_t fake_ze_live_objects(void) {
    return static_cast<uint64_t>(Driver::get().live.load());
}

__attribute__((visibility("default"))) void fake_ze_split_ipc_memory(uint32_t objects) {
    Driver::get().ipc_memory_objects.store(objects == 0 ? 1 : objects);
}

__attribute__((visibility("default"))) void fake_ze_reset(void) {
    {
        std::lock_guard lock(fake_ze::g_injection_mutex);
        fake_ze::g_injections.clear();
        fake_ze::g_any_injection.store(false);
    }
    Driver& driver = Driver::get();
    {
        std::lock_guard lock(driver.mutex);
        for (auto& d : driver.devices) {
            d->lost = false;
            d->lose_countdown = 0;
        }
    }
    fake_ze::g_timer_offset.store(0);
    driver.ipc_memory_objects.store(1);
    driver.changed.notify_all();
}

}  // extern "C"
