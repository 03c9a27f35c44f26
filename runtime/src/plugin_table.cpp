#include <keel/plugin_table.hpp>

#include "access.hpp"
#include "pending_fallible.hpp"
#include "plugin.hpp"

#include <optional>
#include <string>

namespace keel {

const keel_plugin_api& plugin_table(const Device& device) noexcept {
    return detail::Access::slot(device).api().table();
}

keel_device plugin_handle(const Device& device) noexcept { return detail::Access::handle(device); }

keel_stream plugin_handle(const Stream& stream) noexcept { return detail::Access::handle(stream); }

Result<void> settle_fallible_host_funcs(const Stream& stream, std::chrono::milliseconds timeout) {
    detail::PendingFallible* pending = detail::Access::pending_fallible(stream);
    if (pending == nullptr) return {};
    std::optional<Error> failed;
    // A failure ends the wait: what follows it cannot make it good.
    if (!pending->settled(timeout, failed) && !failed) {
        return Error(KEEL_STATUS_UNAVAILABLE,
                     "[settle_fallible_host_funcs] the stream did not run its " + std::to_string(pending->pending()) +
                         " pending host function(s) that can fail it within " + std::to_string(timeout.count()) +
                         " ms (is it blocked behind other work?)");
    }
    if (failed) return *failed;
    return {};
}

}  // namespace keel
