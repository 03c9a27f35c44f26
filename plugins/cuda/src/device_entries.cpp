// The device entries that ask CUDA: the native device and free memory
// (plugin::DevicePlugin lists the devices).
#include "cuda_error.hpp"
#include "entries.hpp"
#include "handles.hpp"

#include <keel/plugin/boundary.hpp>
#include <keel/plugin/native_handle.hpp>

namespace keel::cuda::api {

// The CUDA device ordinal, which is also its CUdevice.
keel_error* device_native_handle(keel_device device, keel_native_handle* out) noexcept {
    return plugin::entry("cuda device_native_handle", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        return plugin::write_native_handle(out, KEEL_NATIVE_HANDLE_CUDA_DEVICE,
                                           static_cast<std::uint64_t>(d->ordinal()));
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
