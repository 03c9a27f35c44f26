// Calls into a device's 1.6 IPC entries, with PluginApi's rules: refused
// from a host function, UNIMPLEMENTED when the plugin lacks the entry (or
// declares an older minor), and the plugin's error as a keel::Error.
#pragma once

#include "../host_func_guard.hpp"
#include "../plugin.hpp"

#include <keel/c_error.hpp>
#include <keel/result.hpp>

#include <string>

namespace keel::ipc::detail {

template <class Fn, class... Args>
[[nodiscard]] Result<void> call_entry(const keel::detail::DeviceSlot& slot, Fn fn, const char* entry,
                                      Args... args) {
    const auto where = [&] { return "[keel::ipc " + std::string(entry) + "] " + slot.name + ": "; };
    if (keel::detail::in_host_func())
        return Error(KEEL_STATUS_FAILED_PRECONDITION,
                     where() + "called from a host function running on a stream (host functions must not "
                               "call into the plugin)");
    if (slot.api().abi_minor() < 6 || fn == nullptr)
        return Error(KEEL_STATUS_UNIMPLEMENTED,
                     where() + "the plugin does not share " +
                         (std::string(entry).find("event") != std::string::npos ? "events" : "memory") +
                         " between processes (optional entry '" + entry + "' absent; its table: ABI 1." +
                         std::to_string(slot.api().abi_minor()) + ")");
    keel_error* error = fn(args...);
    if (error == nullptr) return ok();
    return take_c_error(error);
}

}  // namespace keel::ipc::detail
