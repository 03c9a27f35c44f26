// PluginApi: the one wrapper around a plugin's keel_plugin_api table.
//
// The table is copied once, up to the plugin's struct_size, into a zeroed
// table of this runtime's size: entries of an older minor read as null,
// entries of a newer minor are ignored. Every call then goes through call(),
// which (1) refuses calls from host functions, (2) answers UNIMPLEMENTED for
// an absent entry instead of calling a null pointer, and (3) turns the
// plugin's keel_error into a keel::Error.
#pragma once

#include <keel/c_error.hpp>
#include "host_func_guard.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace keel::detail {

class PluginApi {
public:
    // Checks what the runtime needs before it can use a table: its header,
    // the ABI major, and that every required entry lies within struct_size
    // and is non-null. The error names the first problem ("required entry
    // 'device_free' is null").
    [[nodiscard]] static Result<void> validate(const keel_plugin_api* table);

    PluginApi() = default;
    // `label` starts messages ("[fake device_memory_info] ..."). The table
    // must have passed validate().
    PluginApi(const keel_plugin_api& table, std::string label);

    PluginApi(const PluginApi&) = default;
    PluginApi& operator=(const PluginApi&) = default;
    PluginApi(PluginApi&&) noexcept = default;
    PluginApi& operator=(PluginApi&&) noexcept = default;
    ~PluginApi() = default;

    [[nodiscard]] std::size_t table_size() const noexcept { return table_size_; }
    [[nodiscard]] std::uint32_t abi_major() const noexcept { return table_.abi_major; }
    [[nodiscard]] std::uint32_t abi_minor() const noexcept { return table_.abi_minor; }
    [[nodiscard]] const std::string& label() const noexcept { return label_; }
    // The table as the runtime reads it (zero beyond the plugin's struct_size).
    [[nodiscard]] const keel_plugin_api& table() const noexcept { return table_; }

    // Required entries.
    [[nodiscard]] Result<void> plugin_info(keel_plugin_info* out) const;
    // Calls plugin_shutdown if present; false if it was absent.
    bool plugin_shutdown() const noexcept;
    [[nodiscard]] Result<void> device_count(std::uint32_t* out) const;
    [[nodiscard]] Result<void> device_get(std::uint32_t index, keel_device* out) const;
    [[nodiscard]] Result<void> device_properties(keel_device d, keel_device_properties* out) const;
    [[nodiscard]] Result<void> stream_create(keel_device d, std::uint32_t flags, keel_stream* out) const;
    [[nodiscard]] Result<void> stream_destroy(keel_stream s) const;
    [[nodiscard]] Result<void> stream_synchronize(keel_stream s) const;
    [[nodiscard]] Result<void> stream_query(keel_stream s, std::int32_t* out_done) const;
    [[nodiscard]] Result<void> stream_wait_event(keel_stream s, keel_event e) const;
    [[nodiscard]] Result<void> stream_enqueue_host_func(keel_stream s, keel_host_fn fn,
                                                        void* user_data) const;
    [[nodiscard]] Result<void> event_create(keel_device d, std::uint32_t flags, keel_event* out) const;
    [[nodiscard]] Result<void> event_destroy(keel_event e) const;
    [[nodiscard]] Result<void> event_record(keel_event e, keel_stream s) const;
    [[nodiscard]] Result<void> event_query(keel_event e, std::int32_t* out_done) const;
    [[nodiscard]] Result<void> event_synchronize(keel_event e) const;
    [[nodiscard]] Result<void> device_alloc(keel_device d, std::uint64_t size,
                                            keel_device_addr* out) const;
    [[nodiscard]] Result<void> device_free(keel_device d, keel_device_addr addr) const;
    [[nodiscard]] Result<void> memcpy_h2d(keel_stream s, keel_device_addr dst, const void* src,
                                          std::uint64_t size) const;
    [[nodiscard]] Result<void> memcpy_d2h(keel_stream s, void* dst, keel_device_addr src,
                                          std::uint64_t size) const;
    [[nodiscard]] Result<void> memcpy_d2d(keel_stream s, keel_device_addr dst, keel_device_addr src,
                                          std::uint64_t size) const;
    [[nodiscard]] Result<void> memset_d8(keel_stream s, keel_device_addr dst, std::uint8_t value,
                                         std::uint64_t size) const;

    // Optional entries: UNIMPLEMENTED when absent.
    [[nodiscard]] bool has_host_alloc() const noexcept {
        return table_.host_alloc != nullptr && table_.host_free != nullptr;
    }
    [[nodiscard]] bool has_memcpy_h2d_inline() const noexcept {
        return table_.memcpy_h2d_inline != nullptr;
    }
    [[nodiscard]] Result<void> device_memory_info(keel_device d, std::uint64_t* out_free,
                                                  std::uint64_t* out_total) const;
    [[nodiscard]] Result<void> host_alloc(keel_device d, std::uint64_t size, void** out) const;
    [[nodiscard]] Result<void> host_free(keel_device d, void* ptr) const;
    [[nodiscard]] Result<void> event_elapsed_time(keel_event start, keel_event end, float* out_ms) const;
    [[nodiscard]] Result<void> kernel_get(keel_device d, const char* name, keel_kernel* out) const;
    [[nodiscard]] Result<void> kernel_launch(keel_stream s, keel_kernel k,
                                             const keel_launch_args* launch) const;
    [[nodiscard]] Result<void> memcpy_h2d_inline(keel_stream s, keel_device_addr dst,
                                                 const void* src, std::uint64_t size) const;
    [[nodiscard]] Result<void> device_native_handle(keel_device d, keel_native_handle* out) const;
    [[nodiscard]] Result<void> stream_native_handle(keel_stream s, keel_native_handle* out) const;
    [[nodiscard]] Result<void> device_pageable_staging_stats(keel_device d,
                                                             keel_pageable_staging_stats* out) const;
    [[nodiscard]] bool has_stream_annotate_range() const noexcept {
        return table_.stream_annotate_range != nullptr;
    }
    // [1.4] Only a plugin declaring 1.4 or later is taken at its word.
    [[nodiscard]] bool has_fallible_host_func() const noexcept {
        return table_.abi_minor >= 4 && table_.stream_enqueue_fallible_host_func != nullptr;
    }
    [[nodiscard]] Result<void> stream_enqueue_fallible_host_func(keel_stream s, keel_fallible_host_fn fn,
                                                                 void* user_data) const;
    [[nodiscard]] Result<void> stream_annotate_range(keel_stream s, keel_range_annotation what,
                                                     keel_device_addr addr, std::uint64_t size) const;
    // [1.6] Only a plugin declaring 1.6 or later is taken at its word.
    [[nodiscard]] bool has_plugin_option_info() const noexcept {
        return table_.abi_minor >= 6 && table_.plugin_option_info != nullptr;
    }
    [[nodiscard]] Result<void> plugin_option_info(std::uint32_t index, keel_option_info* out) const;
    [[nodiscard]] bool has_peer_copy() const noexcept {
        return table_.abi_minor >= 6 && table_.device_can_copy_peer != nullptr && table_.memcpy_peer != nullptr;
    }
    [[nodiscard]] Result<void> device_can_copy_peer(keel_device d, keel_device peer, std::int32_t* out_can) const;
    [[nodiscard]] Result<void> memcpy_peer(keel_stream s, keel_device dst_device, keel_device_addr dst,
                                           keel_device src_device, keel_device_addr src, std::uint64_t size) const;

private:
    template <class Fn, class... Args>
    [[nodiscard]] Result<void> call(Fn fn, const char* entry, Args... args) const {
        if (in_host_func()) [[unlikely]] return refused_in_host_func(entry);
        if (fn == nullptr) [[unlikely]] return unimplemented(entry);
        // Success converts nothing: no call on the hot path.
        keel_error* error = fn(args...);
        if (error == nullptr) [[likely]] return ok();
        return take_c_error(error);
    }
    [[nodiscard]] Error unimplemented(const char* entry) const;
    [[nodiscard]] Error refused_in_host_func(const char* entry) const;

    keel_plugin_api table_{};
    std::size_t table_size_ = 0;
    std::string label_;
};

}  // namespace keel::detail
