#include <keel/plugin_table.hpp>

#include "access.hpp"
#include "plugin.hpp"

namespace keel {

const keel_plugin_api& plugin_table(const Device& device) noexcept {
    return detail::Access::slot(device).api().table();
}

keel_device plugin_handle(const Device& device) noexcept { return detail::Access::handle(device); }

keel_stream plugin_handle(const Stream& stream) noexcept { return detail::Access::handle(stream); }

}  // namespace keel
