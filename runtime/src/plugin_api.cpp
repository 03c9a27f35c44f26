#include "plugin_api.hpp"

#include <keel/base/required_entries.hpp>

#include <algorithm>
#include <cstring>

namespace keel::detail {

namespace {

struct RequiredEntry {
    const char* name;
    std::size_t end;  // KEEL_API_ENTRY_END
    bool (*present)(const keel_plugin_api&);
};

#define KEEL_REQUIRED(entry)                                                       \
    RequiredEntry{#entry, KEEL_API_ENTRY_END(entry),                               \
                  [](const keel_plugin_api& t) { return t.entry != nullptr; }},

// Every [required] entry of keel.h, in table order.
constexpr RequiredEntry kRequired[] = {KEEL_REQUIRED_PLUGIN_ENTRIES(KEEL_REQUIRED)};
#undef KEEL_REQUIRED

constexpr std::size_t kHeaderSize = KEEL_STRUCT_SIZE(keel_plugin_api, abi_minor);

std::string version_text(std::uint32_t major, std::uint32_t minor) {
    return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace

Result<void> PluginApi::validate(const keel_plugin_api* table) {
    if (table == nullptr)
        return Error(KEEL_STATUS_INTERNAL, "keel_plugin_init succeeded but returned no table");
    if (table->struct_size < kHeaderSize)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "table struct_size " + std::to_string(table->struct_size) +
                         " is too small to hold its ABI version");
    if (table->abi_major != KEEL_ABI_VERSION_MAJOR)
        return Error(KEEL_STATUS_VERSION_MISMATCH,
                     "plugin implements ABI " + version_text(table->abi_major, table->abi_minor) +
                         ", this runtime implements ABI " +
                         version_text(KEEL_ABI_VERSION_MAJOR, KEEL_ABI_VERSION_MINOR) +
                         " (the major versions must match)");
    for (const RequiredEntry& e : kRequired) {
        if (table->struct_size < e.end)
            return Error(KEEL_STATUS_UNIMPLEMENTED,
                         "table of " + std::to_string(table->struct_size) + " bytes (ABI " +
                             version_text(table->abi_major, table->abi_minor) +
                             ") ends before required entry '" + e.name + "'");
        if (!e.present(*table))
            return Error(KEEL_STATUS_UNIMPLEMENTED,
                         std::string("required entry '") + e.name + "' is null");
    }
    return ok();
}

PluginApi::PluginApi(const keel_plugin_api& table, std::string label)
    : table_size_(table.struct_size), label_(std::move(label)) {
    // Only the bytes the plugin wrote; the rest stays null (absent).
    std::memcpy(&table_, &table, std::min(table.struct_size, sizeof(keel_plugin_api)));
    table_.struct_size = sizeof(keel_plugin_api);
}

Error PluginApi::unimplemented(const char* entry) const {
    return Error(KEEL_STATUS_UNIMPLEMENTED,
                 "[" + label_ + " " + entry + "] the plugin does not implement optional entry '" +
                     entry + "' (its table: ABI " + version_text(table_.abi_major, table_.abi_minor) +
                     ", " + std::to_string(table_size_) + " bytes)");
}

Error PluginApi::refused_in_host_func(const char* entry) const {
    return Error(KEEL_STATUS_FAILED_PRECONDITION,
                 "[" + label_ + " " + entry +
                     "] called from a host function running on a stream; host functions must "
                     "not call into the plugin (see keel_host_fn in keel.h)");
}

Result<void> PluginApi::plugin_info(keel_plugin_info* out) const {
    return call(table_.plugin_info, "plugin_info", out);
}

bool PluginApi::plugin_shutdown() const noexcept {
    if (table_.plugin_shutdown == nullptr) return false;
    table_.plugin_shutdown();
    return true;
}

Result<void> PluginApi::device_count(std::uint32_t* out) const {
    return call(table_.device_count, "device_count", out);
}
Result<void> PluginApi::device_get(std::uint32_t index, keel_device* out) const {
    return call(table_.device_get, "device_get", index, out);
}
Result<void> PluginApi::device_properties(keel_device d, keel_device_properties* out) const {
    return call(table_.device_properties, "device_properties", d, out);
}
Result<void> PluginApi::stream_create(keel_device d, std::uint32_t flags, keel_stream* out) const {
    return call(table_.stream_create, "stream_create", d, flags, out);
}
Result<void> PluginApi::stream_destroy(keel_stream s) const {
    return call(table_.stream_destroy, "stream_destroy", s);
}
Result<void> PluginApi::stream_synchronize(keel_stream s) const {
    return call(table_.stream_synchronize, "stream_synchronize", s);
}
Result<void> PluginApi::stream_query(keel_stream s, std::int32_t* out_done) const {
    return call(table_.stream_query, "stream_query", s, out_done);
}
Result<void> PluginApi::stream_wait_event(keel_stream s, keel_event e) const {
    return call(table_.stream_wait_event, "stream_wait_event", s, e);
}
Result<void> PluginApi::stream_enqueue_host_func(keel_stream s, keel_host_fn fn,
                                                 void* user_data) const {
    return call(table_.stream_enqueue_host_func, "stream_enqueue_host_func", s, fn, user_data);
}
Result<void> PluginApi::stream_enqueue_fallible_host_func(keel_stream s, keel_fallible_host_fn fn,
                                                          void* user_data) const {
    return call(table_.stream_enqueue_fallible_host_func, "stream_enqueue_fallible_host_func", s, fn, user_data);
}
Result<void> PluginApi::event_create(keel_device d, std::uint32_t flags, keel_event* out) const {
    return call(table_.event_create, "event_create", d, flags, out);
}
Result<void> PluginApi::event_destroy(keel_event e) const {
    return call(table_.event_destroy, "event_destroy", e);
}
Result<void> PluginApi::event_record(keel_event e, keel_stream s) const {
    return call(table_.event_record, "event_record", e, s);
}
Result<void> PluginApi::event_query(keel_event e, std::int32_t* out_done) const {
    return call(table_.event_query, "event_query", e, out_done);
}
Result<void> PluginApi::event_synchronize(keel_event e) const {
    return call(table_.event_synchronize, "event_synchronize", e);
}
Result<void> PluginApi::device_alloc(keel_device d, std::uint64_t size, keel_device_addr* out) const {
    return call(table_.device_alloc, "device_alloc", d, size, out);
}
Result<void> PluginApi::device_free(keel_device d, keel_device_addr addr) const {
    return call(table_.device_free, "device_free", d, addr);
}
Result<void> PluginApi::memcpy_h2d(keel_stream s, keel_device_addr dst, const void* src,
                                   std::uint64_t size) const {
    return call(table_.memcpy_h2d, "memcpy_h2d", s, dst, src, size);
}
Result<void> PluginApi::memcpy_d2h(keel_stream s, void* dst, keel_device_addr src,
                                   std::uint64_t size) const {
    return call(table_.memcpy_d2h, "memcpy_d2h", s, dst, src, size);
}
Result<void> PluginApi::memcpy_d2d(keel_stream s, keel_device_addr dst, keel_device_addr src,
                                   std::uint64_t size) const {
    return call(table_.memcpy_d2d, "memcpy_d2d", s, dst, src, size);
}
Result<void> PluginApi::memset_d8(keel_stream s, keel_device_addr dst, std::uint8_t value,
                                  std::uint64_t size) const {
    return call(table_.memset_d8, "memset_d8", s, dst, value, size);
}
Result<void> PluginApi::device_memory_info(keel_device d, std::uint64_t* out_free,
                                           std::uint64_t* out_total) const {
    return call(table_.device_memory_info, "device_memory_info", d, out_free, out_total);
}
Result<void> PluginApi::host_alloc(keel_device d, std::uint64_t size, void** out) const {
    if (!has_host_alloc()) return unimplemented("host_alloc");
    return call(table_.host_alloc, "host_alloc", d, size, out);
}
Result<void> PluginApi::host_free(keel_device d, void* ptr) const {
    return call(table_.host_free, "host_free", d, ptr);
}
Result<void> PluginApi::event_elapsed_time(keel_event start, keel_event end, float* out_ms) const {
    return call(table_.event_elapsed_time, "event_elapsed_time", start, end, out_ms);
}
Result<void> PluginApi::kernel_get(keel_device d, const char* name, keel_kernel* out) const {
    return call(table_.kernel_get, "kernel_get", d, name, out);
}
Result<void> PluginApi::kernel_launch(keel_stream s, keel_kernel k,
                                      const keel_launch_args* launch) const {
    return call(table_.kernel_launch, "kernel_launch", s, k, launch);
}
Result<void> PluginApi::memcpy_h2d_inline(keel_stream s, keel_device_addr dst, const void* src,
                                          std::uint64_t size) const {
    return call(table_.memcpy_h2d_inline, "memcpy_h2d_inline", s, dst, src, size);
}
Result<void> PluginApi::device_native_handle(keel_device d, keel_native_handle* out) const {
    return call(table_.device_native_handle, "device_native_handle", d, out);
}
Result<void> PluginApi::stream_native_handle(keel_stream s, keel_native_handle* out) const {
    return call(table_.stream_native_handle, "stream_native_handle", s, out);
}
Result<void> PluginApi::device_pageable_staging_stats(keel_device d, keel_pageable_staging_stats* out) const {
    return call(table_.device_pageable_staging_stats, "device_pageable_staging_stats", d, out);
}
Result<void> PluginApi::stream_annotate_range(keel_stream s, keel_range_annotation what, keel_device_addr addr,
                                              std::uint64_t size) const {
    return call(table_.stream_annotate_range, "stream_annotate_range", s, what, addr, size);
}
Result<void> PluginApi::plugin_option_info(std::uint32_t index, keel_option_info* out) const {
    if (!has_plugin_option_info()) return unimplemented("plugin_option_info");
    return call(table_.plugin_option_info, "plugin_option_info", index, out);
}

Result<void> PluginApi::device_can_copy_peer(keel_device d, keel_device peer, std::int32_t* out_can) const {
    return call(table_.device_can_copy_peer, "device_can_copy_peer", d, peer, out_can);
}
Result<void> PluginApi::memcpy_peer(keel_stream s, keel_device dst_device, keel_device_addr dst, keel_device src_device,
                                    keel_device_addr src, std::uint64_t size) const {
    return call(table_.memcpy_peer, "memcpy_peer", s, dst_device, dst, src_device, src, size);
}

}  // namespace keel::detail
