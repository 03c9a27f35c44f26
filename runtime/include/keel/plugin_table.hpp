// For extensions that call a plugin's C ABI themselves (keel::comm calls the
// communication entries of keel.h 1.4 this way): the plugin's table behind a
// Device, and the one conversion of a keel_error* into an Error.
#pragma once

#include <keel/device.hpp>
#include <keel/export.hpp>
#include <keel/keel.h>
#include <keel/result.hpp>

namespace keel {

// The table of the plugin behind `device`, as the runtime reads it: entries
// beyond the plugin's struct_size read as null, and abi_minor is the minor
// the plugin declares. Owned by the runtime; valid while `device` (or a copy)
// lives. Calls through it bypass the runtime's checks: the caller follows
// keel.h (no calls from host functions, errors destroyed once).
[[nodiscard]] KEEL_API const keel_plugin_api& plugin_table(const Device& device) noexcept;

// Null: ok. Otherwise the error's code and message, after destroying it.
[[nodiscard]] KEEL_API Result<void> take_plugin_error(keel_error* error) noexcept;

}  // namespace keel
