// The C entry points of keel_plugin_api, each defined next to the concept
// it belongs to (device.cpp: devices and memory; stream_entries.cpp,
// event_entries.cpp, copy_entries.cpp, kernel_entries.cpp; a file named
// <concept>_entries.cpp holds entries in every plugin) and assembled into the
// table by entry.cpp.
// Every one converts Result -> keel_error* through keel::plugin::entry.
#pragma once

#include <keel/keel.h>

namespace keel::cpu::entries {

keel_error* device_count(uint32_t* out_count);
keel_error* device_get(uint32_t index, keel_device* out_device);
keel_error* device_properties(keel_device device, keel_device_properties* out);
keel_error* device_memory_info(keel_device device, uint64_t* out_free, uint64_t* out_total);

keel_error* stream_create(keel_device device, uint32_t flags, keel_stream* out_stream);
keel_error* stream_destroy(keel_stream stream);
keel_error* stream_synchronize(keel_stream stream);
keel_error* stream_query(keel_stream stream, int32_t* out_done);
keel_error* stream_wait_event(keel_stream stream, keel_event event);
keel_error* stream_enqueue_host_func(keel_stream stream, keel_host_fn fn, void* user_data);
keel_error* stream_enqueue_fallible_host_func(keel_stream stream, keel_fallible_host_fn fn, void* user_data);

keel_error* event_create(keel_device device, uint32_t flags, keel_event* out_event);
keel_error* event_destroy(keel_event event);
keel_error* event_record(keel_event event, keel_stream stream);
keel_error* event_query(keel_event event, int32_t* out_done);
keel_error* event_synchronize(keel_event event);
keel_error* event_elapsed_time(keel_event start, keel_event end, float* out_ms);

keel_error* device_alloc(keel_device device, uint64_t size, keel_device_addr* out_addr);
keel_error* device_free(keel_device device, keel_device_addr addr);
keel_error* host_alloc(keel_device device, uint64_t size, void** out_ptr);
keel_error* host_free(keel_device device, void* ptr);

keel_error* memcpy_h2d(keel_stream stream, keel_device_addr dst, const void* src, uint64_t size);
keel_error* memcpy_d2h(keel_stream stream, void* dst, keel_device_addr src, uint64_t size);
keel_error* memcpy_d2d(keel_stream stream, keel_device_addr dst, keel_device_addr src, uint64_t size);
keel_error* memset_d8(keel_stream stream, keel_device_addr dst, uint8_t value, uint64_t size);
keel_error* memcpy_h2d_inline(keel_stream stream, keel_device_addr dst, const void* src, uint64_t size);
keel_error* device_can_copy_peer(keel_device device, keel_device peer, int32_t* out_can);
keel_error* memcpy_peer(keel_stream stream, keel_device dst_device, keel_device_addr dst, keel_device src_device,
                        keel_device_addr src, uint64_t size);

keel_error* kernel_get(keel_device device, const char* name, keel_kernel* out_kernel);
keel_error* kernel_launch(keel_stream stream, keel_kernel kernel, const keel_launch_args* launch);

}  // namespace keel::cpu::entries
