#include <keel/plugin_table.hpp>

#include "access.hpp"
#include "fallible_reach.hpp"
#include "plugin.hpp"

#include <optional>

namespace keel {

const keel_plugin_api& plugin_table(const Device& device) noexcept {
    return detail::Access::slot(device).api().table();
}

keel_device plugin_handle(const Device& device) noexcept { return detail::Access::handle(device); }

keel_stream plugin_handle(const Stream& stream) noexcept { return detail::Access::handle(stream); }

Result<std::optional<PendingHostFuncs>> settle_fallible_host_funcs(const Stream& stream,
                                                                    std::chrono::milliseconds timeout) {
    if (stream.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[settle_fallible_host_funcs] the stream is empty (moved-from or closed)");
    KEEL_TRY_ASSIGN(const std::optional<detail::fallible::StillPending> still,
                    detail::fallible::settle(detail::Access::handle(stream), timeout));
    if (!still) return std::optional<PendingHostFuncs>();
    return std::optional<PendingHostFuncs>(PendingHostFuncs{still->host_funcs, still->streams});
}

}  // namespace keel
