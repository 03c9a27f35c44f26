// For extensions that call a plugin's C ABI themselves (keel::comm calls the
// communication entries of keel.h 1.4 this way): the plugin's table and
// handles behind a Device or Stream. Errors the entries return become an Error
// through keel::take_c_error (<keel/c_error.hpp>).
#pragma once

#include <keel/device.hpp>
#include <keel/export.hpp>
#include <keel/stream.hpp>
#include <keel/keel.h>

#include <chrono>
#include <cstdint>
#include <optional>

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

// Work handed to the plugin through its table after a host function that can
// fail a stream (Stream::enqueue_host_func with a callable returning
// Result<void>, and those the runtime enqueues itself for cross-device waits
// and copies) may run even if that host function fails: keel.h lets a device
// that cannot skip work already submitted behind it run that work over
// unspecified data. That holds for such host functions of `stream` and of
// every stream it waits for (an event or fence recorded there, order_after,
// across devices too), up to the point it waits for. An extension whose work
// others receive (a collective, a send) calls this first: it waits for them on
// this thread, at most `timeout`, and returns the first failure one of them
// returned or saw as its status (its stream had failed before it), as soon as
// one did. A value when some still had not run after `timeout` (what was still
// pending); empty once none is. Returns at once when none is pending (the
// usual case: nothing waits). Any thread except a host function's.
struct PendingHostFuncs {
    std::uint64_t host_funcs = 0;  // still pending when the time ran out
    std::uint64_t streams = 0;     // on how many streams (`stream` and those it waits for)
};
[[nodiscard]] KEEL_API Result<std::optional<PendingHostFuncs>> settle_fallible_host_funcs(
    const Stream& stream, std::chrono::milliseconds timeout);

}  // namespace keel
