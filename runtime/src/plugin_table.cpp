#include <keel/plugin_table.hpp>

#include "access.hpp"
#include "c_error.hpp"
#include "plugin.hpp"

namespace keel {

const keel_plugin_api& plugin_table(const Device& device) noexcept {
    return detail::Access::slot(device).api().table();
}

keel_device plugin_handle(const Device& device) noexcept { return detail::Access::handle(device); }

keel_stream plugin_handle(const Stream& stream) noexcept { return detail::Access::handle(stream); }

Result<void> take_plugin_error(keel_error* error) noexcept { return detail::take_error(error); }

}  // namespace keel
