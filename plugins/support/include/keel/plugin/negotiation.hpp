// What every plugin's entry symbol, plugin_info and device_properties do
// the same way: check the runtime's offer, and write versioned structs only
// as far as the caller's struct_size reaches.
#pragma once

#include <keel/keel.h>
#include <keel/result.hpp>

namespace keel::plugin {

// The host services offered to keel_plugin_init: present, large enough to
// hold the ABI version, and of this plugin's ABI major (VERSION_MISMATCH
// naming both versions otherwise).
[[nodiscard]] Result<void> check_host_services(const keel_host_services* host);

// Writes the fields of plugin_info that fit the caller's `out->struct_size`.
// The strings must outlive the plugin (static storage, or the plugin's state).
[[nodiscard]] Result<void> write_plugin_info(keel_plugin_info* out, const char* device_type, const char* version,
                                             const char* status);

// Copies the fields of `full` after struct_size that fit the caller's
// `out->struct_size` (the struct has no padding: see keel.h's static_assert).
[[nodiscard]] Result<void> write_device_properties(keel_device_properties* out, const keel_device_properties& full);

}  // namespace keel::plugin
