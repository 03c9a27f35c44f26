// The device entry that asks Level Zero: the native device
// (plugin::DevicePlugin lists the devices).
#include "entries.hpp"
#include "handles.hpp"

#include <keel/plugin/boundary.hpp>
#include <keel/plugin/native_handle.hpp>

namespace keel::level_zero::api {

keel_error* device_native_handle(keel_device device, keel_native_handle* out) noexcept {
    return plugin::entry("level_zero device_native_handle", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        return plugin::write_native_handle(out, KEEL_NATIVE_HANDLE_LEVEL_ZERO_DEVICE,
                                           reinterpret_cast<std::uintptr_t>(d->handle()));
    });
}

}  // namespace keel::level_zero::api
