// Every entry of the keel_plugin_api table this plugin fills itself, one
// group per source file (plugin::DevicePlugin, plugin_state.hpp, has the
// rest). Each converts its Result to the ABI's keel_error* through
// keel::plugin::entry, so no exception or Level Zero error escapes
// unreported.
//
// The CUDA and Level Zero plugins declare the same list (their entries.hpp):
// what they share lives in plugins/support (plugin::DevicePlugin, the
// boundary, handles, kernel tables); what stays is each plugin's own
// functions in its own namespace. The compiler checks each declaration
// against keel.h where entry.cpp puts its address in the table, so one
// shared list would need a macro around every declaration and catch nothing
// more.
#pragma once

#include <keel/keel.h>

namespace keel::level_zero::api {

// device_entries.cpp
keel_error* device_native_handle(keel_device device, keel_native_handle* out) noexcept;

// stream_entries.cpp
keel_error* stream_create(keel_device device, uint32_t flags, keel_stream* out_stream) noexcept;
keel_error* stream_destroy(keel_stream stream) noexcept;
keel_error* stream_synchronize(keel_stream stream) noexcept;
keel_error* stream_query(keel_stream stream, int32_t* out_done) noexcept;
keel_error* stream_native_handle(keel_stream stream, keel_native_handle* out) noexcept;
keel_error* stream_wait_event(keel_stream stream, keel_event event) noexcept;
keel_error* stream_enqueue_host_func(keel_stream stream, keel_host_fn fn, void* user_data) noexcept;
keel_error* stream_enqueue_fallible_host_func(keel_stream stream, keel_fallible_host_fn fn, void* user_data) noexcept;

// event_entries.cpp
keel_error* event_create(keel_device device, uint32_t flags, keel_event* out_event) noexcept;
keel_error* event_destroy(keel_event event) noexcept;
keel_error* event_record(keel_event event, keel_stream stream) noexcept;
keel_error* event_query(keel_event event, int32_t* out_done) noexcept;
keel_error* event_synchronize(keel_event event) noexcept;
keel_error* event_elapsed_time(keel_event start, keel_event end, float* out_ms) noexcept;

// memory_entries.cpp
keel_error* device_alloc(keel_device device, uint64_t size, keel_device_addr* out_addr) noexcept;
keel_error* device_free(keel_device device, keel_device_addr addr) noexcept;
keel_error* host_alloc(keel_device device, uint64_t size, void** out_ptr) noexcept;
keel_error* host_free(keel_device device, void* ptr) noexcept;

// ipc_entries.cpp
keel_error* ipc_memory_alloc(keel_device device, uint64_t size, keel_device_addr* out_addr) noexcept;
keel_error* ipc_memory_export(keel_device device, keel_device_addr addr, keel_ipc_handle* out) noexcept;
keel_error* ipc_memory_import(keel_device device, const keel_ipc_handle* handle, keel_device_addr* out_addr) noexcept;
keel_error* ipc_memory_close(keel_device device, keel_device_addr addr) noexcept;

// ipc_event_entries.cpp
keel_error* ipc_event_export(keel_event event, keel_ipc_handle* out) noexcept;
keel_error* ipc_event_import(keel_device device, const keel_ipc_handle* handle, keel_event* out_event) noexcept;

// copy_entries.cpp
keel_error* memcpy_h2d(keel_stream stream, keel_device_addr dst, const void* src, uint64_t size) noexcept;
keel_error* memcpy_d2h(keel_stream stream, void* dst, keel_device_addr src, uint64_t size) noexcept;
keel_error* memcpy_d2d(keel_stream stream, keel_device_addr dst, keel_device_addr src, uint64_t size) noexcept;
keel_error* memset_d8(keel_stream stream, keel_device_addr dst, uint8_t value, uint64_t size) noexcept;
keel_error* memcpy_h2d_inline(keel_stream stream, keel_device_addr dst, const void* src,
                              uint64_t size) noexcept;

// kernel_registry.cpp
keel_error* kernel_get(keel_device device, const char* name, keel_kernel* out_kernel) noexcept;
keel_error* kernel_launch(keel_stream stream, keel_kernel kernel, const keel_launch_args* launch) noexcept;

}  // namespace keel::level_zero::api
