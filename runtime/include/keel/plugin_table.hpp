// For extensions that call a plugin's C ABI themselves (keel::comm calls the
// communication entries of keel.h 1.4 this way): the plugin's table and
// handles behind a Device or Stream, and the one conversion of a keel_error*
// into an Error.
#pragma once

#include <keel/device.hpp>
#include <keel/export.hpp>
#include <keel/stream.hpp>
#include <keel/keel.h>
#include <keel/result.hpp>

namespace keel {

// The table of the plugin behind `device`, as the runtime reads it: entries
// beyond the plugin's struct_size read as null, and abi_minor is the minor
// the plugin declares. Owned by the runtime; valid while `device` (or a copy)
// lives. Calls through it bypass the runtime's checks: the caller follows
// keel.h (no calls from host functions, errors destroyed once).
[[nodiscard]] KEEL_API const keel_plugin_api& plugin_table(const Device& device) noexcept;

// The plugin's own handles behind a Device and a Stream, for that table's
// entries: valid while the object lives; never destroy them through the table.
[[nodiscard]] KEEL_API keel_device plugin_handle(const Device& device) noexcept;
[[nodiscard]] KEEL_API keel_stream plugin_handle(const Stream& stream) noexcept;

// Null: ok. Otherwise the error's code and message, after destroying it.
[[nodiscard]] KEEL_API Result<void> take_plugin_error(keel_error* error) noexcept;

}  // namespace keel
