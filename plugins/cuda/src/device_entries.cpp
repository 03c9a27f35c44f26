// Devices: how many, which, what they are, how much memory is free.
#include "cuda_error.hpp"
#include "entries.hpp"
#include "handles.hpp"
#include "plugin_state.hpp"

#include <keel/plugin/boundary.hpp>
#include <keel/plugin/native_handle.hpp>
#include <keel/plugin/negotiation.hpp>

#include <algorithm>
#include <cstring>

namespace keel::cuda::api {

keel_error* device_count(uint32_t* out_count) noexcept {
    return plugin::entry("cuda device_count", [&]() -> Result<void> {
        KEEL_TRY(plugin::require_non_null(out_count, "out_count"));
        *out_count = static_cast<uint32_t>(state().devices().size());
        return ok();
    });
}

keel_error* device_get(uint32_t index, keel_device* out_device) noexcept {
    return plugin::entry("cuda device_get", [&]() -> Result<void> {
        KEEL_TRY(plugin::require_non_null(out_device, "out_device"));
        const auto& devices = state().devices();
        if (index >= devices.size()) {
            std::string message = "no device cuda:" + std::to_string(index) + " (" +
                                  std::to_string(devices.size()) + " device(s))";
            if (!state().status().empty()) message += ": " + state().status();
            return Error(KEEL_STATUS_NOT_FOUND, std::move(message));
        }
        *out_device = to_handle(devices[index].get());
        return ok();
    });
}

keel_error* device_properties(keel_device device, keel_device_properties* out) noexcept {
    return plugin::entry("cuda device_properties", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        return plugin::write_device_properties(out, d->properties());
    });
}

// The CUDA device ordinal, which is also its CUdevice.
keel_error* device_native_handle(keel_device device, keel_native_handle* out) noexcept {
    return plugin::entry("cuda device_native_handle", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        return plugin::write_native_handle(out, KEEL_NATIVE_HANDLE_CUDA_DEVICE,
                                           static_cast<std::uint64_t>(d->ordinal()));
    });
}

keel_error* device_pageable_staging_stats(keel_device device, keel_pageable_staging_stats* out) noexcept {
    return plugin::entry("cuda device_pageable_staging_stats", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        return d->pageable_staging().write_stats(out);
    });
}

keel_error* device_memory_info(keel_device device, uint64_t* out_free, uint64_t* out_total) noexcept {
    return plugin::entry("cuda device_memory_info", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(out_free, "out_free"));
        KEEL_TRY(plugin::require_non_null(out_total, "out_total"));
        KEEL_TRY(d->make_current());
        std::size_t free_bytes = 0;
        std::size_t total_bytes = 0;
        KEEL_TRY(check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes)));
        *out_free = free_bytes;
        *out_total = total_bytes;
        return ok();
    });
}

}  // namespace keel::cuda::api
