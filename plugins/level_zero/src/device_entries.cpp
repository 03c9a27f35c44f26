// Devices: how many, which, what they are.
#include "entries.hpp"
#include "handles.hpp"
#include "plugin_state.hpp"

#include <keel/plugin/boundary.hpp>
#include <keel/plugin/native_handle.hpp>
#include <keel/plugin/negotiation.hpp>

namespace keel::level_zero::api {

keel_error* device_count(uint32_t* out_count) noexcept {
    return plugin::entry("level_zero device_count", [&]() -> Result<void> {
        KEEL_TRY(plugin::require_non_null(out_count, "out_count"));
        *out_count = static_cast<uint32_t>(state().devices().size());
        return ok();
    });
}

keel_error* device_get(uint32_t index, keel_device* out_device) noexcept {
    return plugin::entry("level_zero device_get", [&]() -> Result<void> {
        KEEL_TRY(plugin::require_non_null(out_device, "out_device"));
        const auto& devices = state().devices();
        if (index >= devices.size()) {
            std::string message = "no device level_zero:" + std::to_string(index) + " (" +
                                  std::to_string(devices.size()) + " device(s))";
            if (!state().status().empty()) message += ": " + state().status();
            return Error(KEEL_STATUS_NOT_FOUND, std::move(message));
        }
        *out_device = to_handle(devices[index].get());
        return ok();
    });
}

keel_error* device_native_handle(keel_device device, keel_native_handle* out) noexcept {
    return plugin::entry("level_zero device_native_handle", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        return plugin::write_native_handle(out, KEEL_NATIVE_HANDLE_LEVEL_ZERO_DEVICE,
                                           reinterpret_cast<std::uintptr_t>(d->handle()));
    });
}

keel_error* device_pageable_staging_stats(keel_device device, keel_pageable_staging_stats* out) noexcept {
    return plugin::entry("level_zero device_pageable_staging_stats", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        return d->pageable_staging().write_stats(out);
    });
}

keel_error* device_properties(keel_device device, keel_device_properties* out) noexcept {
    return plugin::entry("level_zero device_properties", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        return plugin::write_device_properties(out, d->properties());
    });
}

}  // namespace keel::level_zero::api
