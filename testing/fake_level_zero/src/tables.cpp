// The entry points the Level Zero loader looks up in a driver. Loader 1.8
// requires every core table of ze, zet and zes (the experimental ones are
// optional) and fails zeInit if one is missing, so all are exported; only
// the ze functions keel uses are filled in, the rest stay null (the loader
// answers ZE_RESULT_ERROR_UNINITIALIZED for a null entry).
#include "api.hpp"

#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

#include <cstring>

#define FAKE_ZE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

template <class Table>
ze_result_t start_table(ze_api_version_t version, Table* table) {
    if (table == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (ZE_MAJOR_VERSION(version) != ZE_MAJOR_VERSION(ZE_API_VERSION_CURRENT)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
    std::memset(table, 0, sizeof *table);
    return ZE_RESULT_SUCCESS;
}

}  // namespace

namespace api = fake_ze::api;

#define FAKE_ZE_TABLE(getter, table_type)                                         \
    static void fill_##getter(table_type* t);                                    \
    FAKE_ZE_EXPORT ze_result_t ZE_APICALL getter(ze_api_version_t v, table_type* t) { \
        const ze_result_t r = start_table(v, t);                                  \
        if (r == ZE_RESULT_SUCCESS) fill_##getter(t);                             \
        return r;                                                                 \
    }                                                                             \
    static void fill_##getter([[maybe_unused]] table_type* t)

#define FAKE_ZE_EMPTY_TABLE(getter, table_type) \
    FAKE_ZE_TABLE(getter, table_type) {}

FAKE_ZE_TABLE(zeGetGlobalProcAddrTable, ze_global_dditable_t) { t->pfnInit = api::zeInit; }

FAKE_ZE_TABLE(zeGetDriverProcAddrTable, ze_driver_dditable_t) {
    t->pfnGet = api::zeDriverGet;
    t->pfnGetApiVersion = api::zeDriverGetApiVersion;
    t->pfnGetProperties = api::zeDriverGetProperties;
    t->pfnGetIpcProperties = api::zeDriverGetIpcProperties;
    t->pfnGetExtensionFunctionAddress = api::zeDriverGetExtensionFunctionAddress;
}

FAKE_ZE_TABLE(zeGetDeviceProcAddrTable, ze_device_dditable_t) {
    t->pfnGet = api::zeDeviceGet;
    t->pfnGetProperties = api::zeDeviceGetProperties;
    t->pfnGetComputeProperties = api::zeDeviceGetComputeProperties;
    t->pfnGetModuleProperties = api::zeDeviceGetModuleProperties;
    t->pfnGetCommandQueueGroupProperties = api::zeDeviceGetCommandQueueGroupProperties;
    t->pfnGetMemoryProperties = api::zeDeviceGetMemoryProperties;
}

FAKE_ZE_TABLE(zeGetContextProcAddrTable, ze_context_dditable_t) {
    t->pfnCreate = api::zeContextCreate;
    t->pfnDestroy = api::zeContextDestroy;
}

FAKE_ZE_TABLE(zeGetCommandListProcAddrTable, ze_command_list_dditable_t) {
    t->pfnCreateImmediate = api::zeCommandListCreateImmediate;
    t->pfnDestroy = api::zeCommandListDestroy;
    t->pfnAppendBarrier = api::zeCommandListAppendBarrier;
    t->pfnAppendMemoryCopy = api::zeCommandListAppendMemoryCopy;
    t->pfnAppendMemoryFill = api::zeCommandListAppendMemoryFill;
    t->pfnAppendLaunchKernel = api::zeCommandListAppendLaunchKernel;
}

FAKE_ZE_TABLE(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t) {
    t->pfnCreate = api::zeEventPoolCreate;
    t->pfnDestroy = api::zeEventPoolDestroy;
    t->pfnGetIpcHandle = api::zeEventPoolGetIpcHandle;
    t->pfnOpenIpcHandle = api::zeEventPoolOpenIpcHandle;
    t->pfnCloseIpcHandle = api::zeEventPoolCloseIpcHandle;
}

FAKE_ZE_TABLE(zeGetEventProcAddrTable, ze_event_dditable_t) {
    t->pfnCreate = api::zeEventCreate;
    t->pfnDestroy = api::zeEventDestroy;
    t->pfnHostSignal = api::zeEventHostSignal;
    t->pfnHostSynchronize = api::zeEventHostSynchronize;
    t->pfnQueryStatus = api::zeEventQueryStatus;
    t->pfnHostReset = api::zeEventHostReset;
    t->pfnQueryKernelTimestamp = api::zeEventQueryKernelTimestamp;
}

FAKE_ZE_TABLE(zeGetMemProcAddrTable, ze_mem_dditable_t) {
    t->pfnAllocDevice = api::zeMemAllocDevice;
    t->pfnAllocHost = api::zeMemAllocHost;
    t->pfnFree = api::zeMemFree;
    t->pfnGetAllocProperties = api::zeMemGetAllocProperties;
    t->pfnGetAddressRange = api::zeMemGetAddressRange;
    t->pfnGetIpcHandle = api::zeMemGetIpcHandle;
    t->pfnOpenIpcHandle = api::zeMemOpenIpcHandle;
    t->pfnCloseIpcHandle = api::zeMemCloseIpcHandle;
}

FAKE_ZE_TABLE(zeGetModuleProcAddrTable, ze_module_dditable_t) {
    t->pfnCreate = api::zeModuleCreate;
    t->pfnDestroy = api::zeModuleDestroy;
}

FAKE_ZE_TABLE(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t) {
    t->pfnDestroy = api::zeModuleBuildLogDestroy;
    t->pfnGetString = api::zeModuleBuildLogGetString;
}

FAKE_ZE_TABLE(zeGetKernelProcAddrTable, ze_kernel_dditable_t) {
    t->pfnCreate = api::zeKernelCreate;
    t->pfnDestroy = api::zeKernelDestroy;
    t->pfnSetGroupSize = api::zeKernelSetGroupSize;
    t->pfnSetArgumentValue = api::zeKernelSetArgumentValue;
}

FAKE_ZE_EMPTY_TABLE(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t)
FAKE_ZE_EMPTY_TABLE(zeGetFenceProcAddrTable, ze_fence_dditable_t)
FAKE_ZE_EMPTY_TABLE(zeGetImageProcAddrTable, ze_image_dditable_t)
FAKE_ZE_EMPTY_TABLE(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)
FAKE_ZE_EMPTY_TABLE(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t)
FAKE_ZE_EMPTY_TABLE(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)

FAKE_ZE_EMPTY_TABLE(zetGetDeviceProcAddrTable, zet_device_dditable_t)
FAKE_ZE_EMPTY_TABLE(zetGetContextProcAddrTable, zet_context_dditable_t)
FAKE_ZE_EMPTY_TABLE(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)
FAKE_ZE_EMPTY_TABLE(zetGetModuleProcAddrTable, zet_module_dditable_t)
FAKE_ZE_EMPTY_TABLE(zetGetKernelProcAddrTable, zet_kernel_dditable_t)
FAKE_ZE_EMPTY_TABLE(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)
FAKE_ZE_EMPTY_TABLE(zetGetMetricProcAddrTable, zet_metric_dditable_t)
FAKE_ZE_EMPTY_TABLE(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)
FAKE_ZE_EMPTY_TABLE(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)
FAKE_ZE_EMPTY_TABLE(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)
FAKE_ZE_EMPTY_TABLE(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)
FAKE_ZE_EMPTY_TABLE(zetGetDebugProcAddrTable, zet_debug_dditable_t)

FAKE_ZE_EMPTY_TABLE(zesGetDriverProcAddrTable, zes_driver_dditable_t)
FAKE_ZE_EMPTY_TABLE(zesGetDeviceProcAddrTable, zes_device_dditable_t)
FAKE_ZE_EMPTY_TABLE(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)
FAKE_ZE_EMPTY_TABLE(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t)
FAKE_ZE_EMPTY_TABLE(zesGetPowerProcAddrTable, zes_power_dditable_t)
FAKE_ZE_EMPTY_TABLE(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)
FAKE_ZE_EMPTY_TABLE(zesGetEngineProcAddrTable, zes_engine_dditable_t)
FAKE_ZE_EMPTY_TABLE(zesGetStandbyProcAddrTable, zes_standby_dditable_t)
FAKE_ZE_EMPTY_TABLE(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)
FAKE_ZE_EMPTY_TABLE(zesGetMemoryProcAddrTable, zes_memory_dditable_t)
FAKE_ZE_EMPTY_TABLE(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)
FAKE_ZE_EMPTY_TABLE(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)
FAKE_ZE_EMPTY_TABLE(zesGetPsuProcAddrTable, zes_psu_dditable_t)
FAKE_ZE_EMPTY_TABLE(zesGetFanProcAddrTable, zes_fan_dditable_t)
FAKE_ZE_EMPTY_TABLE(zesGetLedProcAddrTable, zes_led_dditable_t)
FAKE_ZE_EMPTY_TABLE(zesGetRasProcAddrTable, zes_ras_dditable_t)
FAKE_ZE_EMPTY_TABLE(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)
