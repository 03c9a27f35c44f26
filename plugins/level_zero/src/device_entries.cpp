// Devices: how many, which, what they are.
#include "entries.hpp"
#include "handles.hpp"
#include "plugin_state.hpp"

#include <keel/plugin/boundary.hpp>

#include <algorithm>
#include <cstring>

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

keel_error* device_properties(keel_device device, keel_device_properties* out) noexcept {
    return plugin::entry("level_zero device_properties", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(out, "out"));
        if (out->struct_size < sizeof(out->struct_size))
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "out->struct_size is not set");
        // Copies the fields after struct_size that fit the caller's struct
        // (the layout has no padding: see the static_assert in keel.h).
        const keel_device_properties& full = d->properties();
        const std::size_t end = std::min<std::size_t>(out->struct_size, sizeof full);
        constexpr std::size_t begin = sizeof full.struct_size;
        std::memcpy(reinterpret_cast<char*>(out) + begin, reinterpret_cast<const char*>(&full) + begin,
                    end - begin);
        return ok();
    });
}

}  // namespace keel::level_zero::api
