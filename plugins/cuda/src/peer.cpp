// Copies between the memory of two CUDA devices (keel.h 1.6, "several
// devices"): cudaMemcpyPeerAsync, which copies directly over NVLink or PCIe
// where the pair can access each other and through the driver's own
// staging otherwise, so every pair of distinct devices is accepted. Each
// side is checked against its own device's allocations first.
#include "cuda_error.hpp"
#include "entries.hpp"
#include "handles.hpp"

#include <keel/plugin/boundary.hpp>

namespace keel::cuda::api {

keel_error* device_can_copy_peer(keel_device device, keel_device peer, int32_t* out_can) noexcept {
    return plugin::entry("cuda device_can_copy_peer", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * a, device_from(device));
        KEEL_TRY_ASSIGN(Device * b, device_from(peer, "peer"));
        KEEL_TRY(plugin::require_non_null(out_can, "out_can"));
        *out_can = a != b ? 1 : 0;
        return ok();
    });
}

keel_error* memcpy_peer(keel_stream stream, keel_device dst_device, keel_device_addr dst, keel_device src_device,
                        keel_device_addr src, uint64_t size) noexcept {
    return plugin::entry("cuda memcpy_peer", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, enqueue_stream_from(stream));
        KEEL_TRY_ASSIGN(Device * to, device_from(dst_device, "dst_device"));
        KEEL_TRY_ASSIGN(Device * from, device_from(src_device, "src_device"));
        if (to == from)
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         "both sides are memory of " + to->label() + " (a copy on one device is memcpy_d2d)");
        if (&s->device() != to && &s->device() != from)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "the stream is on " + s->device().label() + ", neither " +
                                                           from->label() + " nor " + to->label());
        if (size == 0) return ok();
        KEEL_TRY(to->allocations().check(dst, size, "destination"));
        KEEL_TRY(from->allocations().check(src, size, "source"));
        KEEL_TRY(s->device().ensure_context());
        return check_cuda(cudaMemcpyPeerAsync(reinterpret_cast<void*>(static_cast<std::uintptr_t>(dst)), to->ordinal(),
                                              reinterpret_cast<const void*>(static_cast<std::uintptr_t>(src)),
                                              from->ordinal(), size, s->cuda()));
    });
}

}  // namespace keel::cuda::api
