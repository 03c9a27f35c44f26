// The Level Zero functions the fake driver implements, by source file. The
// exported ze*GetProcAddrTable functions (tables.cpp) hand them to the
// loader; everything else is hidden, so nothing here can interpose on the
// loader's own exported zeX symbols.
#pragma once

#include <level_zero/ze_api.h>

namespace fake_ze::api {

// driver.cpp
ze_result_t ZE_APICALL zeInit(ze_init_flags_t flags);
ze_result_t ZE_APICALL zeDriverGet(uint32_t* count, ze_driver_handle_t* drivers);
ze_result_t ZE_APICALL zeDriverGetApiVersion(ze_driver_handle_t driver, ze_api_version_t* version);
ze_result_t ZE_APICALL zeDriverGetProperties(ze_driver_handle_t driver, ze_driver_properties_t* props);
ze_result_t ZE_APICALL zeDriverGetIpcProperties(ze_driver_handle_t driver, ze_driver_ipc_properties_t* props);
ze_result_t ZE_APICALL zeDeviceGet(ze_driver_handle_t driver, uint32_t* count, ze_device_handle_t* devices);
ze_result_t ZE_APICALL zeDeviceGetProperties(ze_device_handle_t device, ze_device_properties_t* props);
ze_result_t ZE_APICALL zeDeviceGetComputeProperties(ze_device_handle_t device, ze_device_compute_properties_t* props);
ze_result_t ZE_APICALL zeDeviceGetModuleProperties(ze_device_handle_t device, ze_device_module_properties_t* props);
ze_result_t ZE_APICALL zeDeviceGetMemoryProperties(ze_device_handle_t device, uint32_t* count,
                                                   ze_device_memory_properties_t* props);
ze_result_t ZE_APICALL zeDeviceGetCommandQueueGroupProperties(ze_device_handle_t device, uint32_t* count,
                                                              ze_command_queue_group_properties_t* props);
ze_result_t ZE_APICALL zeContextCreate(ze_driver_handle_t driver, const ze_context_desc_t* desc,
                                       ze_context_handle_t* context);
ze_result_t ZE_APICALL zeContextDestroy(ze_context_handle_t context);

// memory.cpp
ze_result_t ZE_APICALL zeMemAllocDevice(ze_context_handle_t context, const ze_device_mem_alloc_desc_t* desc,
                                        size_t size, size_t alignment, ze_device_handle_t device, void** ptr);
ze_result_t ZE_APICALL zeMemAllocHost(ze_context_handle_t context, const ze_host_mem_alloc_desc_t* desc, size_t size,
                                      size_t alignment, void** ptr);
ze_result_t ZE_APICALL zeMemFree(ze_context_handle_t context, void* ptr);
ze_result_t ZE_APICALL zeMemGetAllocProperties(ze_context_handle_t context, const void* ptr,
                                               ze_memory_allocation_properties_t* props, ze_device_handle_t* device);
ze_result_t ZE_APICALL zeMemGetAddressRange(ze_context_handle_t context, const void* ptr, void** base, size_t* size);

// ipc_memory.cpp
ze_result_t ZE_APICALL zeMemGetIpcHandle(ze_context_handle_t context, const void* ptr, ze_ipc_mem_handle_t* handle);
ze_result_t ZE_APICALL zeMemOpenIpcHandle(ze_context_handle_t context, ze_device_handle_t device,
                                          ze_ipc_mem_handle_t handle, ze_ipc_memory_flags_t flags, void** ptr);
ze_result_t ZE_APICALL zeMemCloseIpcHandle(ze_context_handle_t context, const void* ptr);
ze_result_t ZE_APICALL zexMemGetIpcHandles(ze_context_handle_t context, const void* ptr, uint32_t* count,
                                           ze_ipc_mem_handle_t* handles);
ze_result_t ZE_APICALL zeDriverGetExtensionFunctionAddress(ze_driver_handle_t driver, const char* name,
                                                           void** function);

// ipc_events.cpp
ze_result_t ZE_APICALL zeEventPoolGetIpcHandle(ze_event_pool_handle_t pool, ze_ipc_event_pool_handle_t* handle);
ze_result_t ZE_APICALL zeEventPoolOpenIpcHandle(ze_context_handle_t context, ze_ipc_event_pool_handle_t handle,
                                                ze_event_pool_handle_t* pool);
ze_result_t ZE_APICALL zeEventPoolCloseIpcHandle(ze_event_pool_handle_t pool);

// events.cpp
ze_result_t ZE_APICALL zeEventPoolCreate(ze_context_handle_t context, const ze_event_pool_desc_t* desc,
                                         uint32_t device_count, ze_device_handle_t* devices,
                                         ze_event_pool_handle_t* pool);
ze_result_t ZE_APICALL zeEventPoolDestroy(ze_event_pool_handle_t pool);
ze_result_t ZE_APICALL zeEventCreate(ze_event_pool_handle_t pool, const ze_event_desc_t* desc,
                                     ze_event_handle_t* event);
ze_result_t ZE_APICALL zeEventDestroy(ze_event_handle_t event);
ze_result_t ZE_APICALL zeEventHostSignal(ze_event_handle_t event);
ze_result_t ZE_APICALL zeEventHostSynchronize(ze_event_handle_t event, uint64_t timeout_ns);
ze_result_t ZE_APICALL zeEventQueryStatus(ze_event_handle_t event);
ze_result_t ZE_APICALL zeEventHostReset(ze_event_handle_t event);
ze_result_t ZE_APICALL zeEventQueryKernelTimestamp(ze_event_handle_t event, ze_kernel_timestamp_result_t* out);

// command_lists.cpp
ze_result_t ZE_APICALL zeCommandListCreateImmediate(ze_context_handle_t context, ze_device_handle_t device,
                                                    const ze_command_queue_desc_t* desc,
                                                    ze_command_list_handle_t* list);
ze_result_t ZE_APICALL zeCommandListDestroy(ze_command_list_handle_t list);
ze_result_t ZE_APICALL zeCommandListAppendBarrier(ze_command_list_handle_t list, ze_event_handle_t signal,
                                                  uint32_t wait_count, ze_event_handle_t* waits);
ze_result_t ZE_APICALL zeCommandListAppendMemoryCopy(ze_command_list_handle_t list, void* dst, const void* src,
                                                     size_t size, ze_event_handle_t signal, uint32_t wait_count,
                                                     ze_event_handle_t* waits);
ze_result_t ZE_APICALL zeCommandListAppendMemoryFill(ze_command_list_handle_t list, void* ptr, const void* pattern,
                                                     size_t pattern_size, size_t size, ze_event_handle_t signal,
                                                     uint32_t wait_count, ze_event_handle_t* waits);
ze_result_t ZE_APICALL zeCommandListAppendLaunchKernel(ze_command_list_handle_t list, ze_kernel_handle_t kernel,
                                                       const ze_group_count_t* groups, ze_event_handle_t signal,
                                                       uint32_t wait_count, ze_event_handle_t* waits);

// modules.cpp
ze_result_t ZE_APICALL zeModuleCreate(ze_context_handle_t context, ze_device_handle_t device,
                                      const ze_module_desc_t* desc, ze_module_handle_t* module,
                                      ze_module_build_log_handle_t* log);
ze_result_t ZE_APICALL zeModuleDestroy(ze_module_handle_t module);
ze_result_t ZE_APICALL zeModuleBuildLogGetString(ze_module_build_log_handle_t log, size_t* size, char* text);
ze_result_t ZE_APICALL zeModuleBuildLogDestroy(ze_module_build_log_handle_t log);
ze_result_t ZE_APICALL zeKernelCreate(ze_module_handle_t module, const ze_kernel_desc_t* desc,
                                      ze_kernel_handle_t* kernel);
ze_result_t ZE_APICALL zeKernelDestroy(ze_kernel_handle_t kernel);
ze_result_t ZE_APICALL zeKernelSetGroupSize(ze_kernel_handle_t kernel, uint32_t x, uint32_t y, uint32_t z);
ze_result_t ZE_APICALL zeKernelSetArgumentValue(ze_kernel_handle_t kernel, uint32_t index, size_t size,
                                                const void* value);

}  // namespace fake_ze::api
