// Asynchronous copies and memset. Device ranges are checked against the
// live allocations first, so a wrong address is an error at the call, not
// an illegal-address fault later that would end the CUDA context. Pinned
// host memory goes straight to cudaMemcpyAsync; pageable memory through
// pageable_copy.hpp, which keeps the ABI's "read/written when it executes".
#include "cuda_error.hpp"
#include "entries.hpp"
#include "handles.hpp"
#include "inline_copy.hpp"
#include "pageable_copy.hpp"

#include <keel/plugin/boundary.hpp>
#include <keel/plugin/copy_args.hpp>

namespace keel::cuda::api {

keel_error* memcpy_h2d(keel_stream stream, keel_device_addr dst, const void* src, uint64_t size) noexcept {
    return plugin::entry("cuda memcpy_h2d", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, enqueue_stream_from(stream));
        if (size == 0) return ok();
        KEEL_TRY(plugin::require_non_null(src, "source"));
        KEEL_TRY(s->device().allocations().check(dst, size, "destination"));
        KEEL_TRY(s->device().ensure_context());
        if (!is_dma_capable(s->device(), src, size)) {
            KEEL_TRY(s->device().make_current());
            return enqueue_pageable_h2d(s->device(), s->cuda(), device_ptr(dst), src, size);
        }
        return check_cuda(cudaMemcpyAsync(device_ptr(dst), src, size, cudaMemcpyHostToDevice, s->cuda()));
    });
}

keel_error* memcpy_d2h(keel_stream stream, void* dst, keel_device_addr src, uint64_t size) noexcept {
    return plugin::entry("cuda memcpy_d2h", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, enqueue_stream_from(stream));
        if (size == 0) return ok();
        KEEL_TRY(plugin::require_non_null(dst, "destination"));
        KEEL_TRY(s->device().allocations().check(src, size, "source"));
        KEEL_TRY(s->device().ensure_context());
        if (!is_dma_capable(s->device(), dst, size)) {
            KEEL_TRY(s->device().make_current());
            return enqueue_pageable_d2h(s->device(), s->cuda(), dst, device_ptr(src), size);
        }
        return check_cuda(cudaMemcpyAsync(dst, device_ptr(src), size, cudaMemcpyDeviceToHost, s->cuda()));
    });
}

keel_error* memcpy_d2d(keel_stream stream, keel_device_addr dst, keel_device_addr src, uint64_t size) noexcept {
    return plugin::entry("cuda memcpy_d2d", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, enqueue_stream_from(stream));
        if (size == 0) return ok();
        KEEL_TRY(s->device().allocations().check(dst, size, "destination"));
        KEEL_TRY(s->device().allocations().check(src, size, "source"));
        KEEL_TRY(plugin::check_no_overlap(dst, src, size));
        KEEL_TRY(s->device().ensure_context());
        return check_cuda(
            cudaMemcpyAsync(device_ptr(dst), device_ptr(src), size, cudaMemcpyDeviceToDevice, s->cuda()));
    });
}

keel_error* memset_d8(keel_stream stream, keel_device_addr dst, uint8_t value, uint64_t size) noexcept {
    return plugin::entry("cuda memset_d8", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, enqueue_stream_from(stream));
        if (size == 0) return ok();
        KEEL_TRY(s->device().allocations().check(dst, size, "destination"));
        KEEL_TRY(s->device().make_current());
        return check_cuda(cudaMemsetAsync(device_ptr(dst), value, size, s->cuda()));
    });
}

keel_error* memcpy_h2d_inline(keel_stream stream, keel_device_addr dst, const void* src,
                              uint64_t size) noexcept {
    return plugin::entry("cuda memcpy_h2d_inline", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, enqueue_stream_from(stream));
        KEEL_TRY(plugin::check_inline_copy_size(size));
        if (size == 0) return ok();
        KEEL_TRY(plugin::require_non_null(src, "source"));
        KEEL_TRY(s->device().allocations().check(dst, size, "destination"));
        KEEL_TRY(s->device().make_current());
        return enqueue_inline_copy(s->cuda(), dst, src, static_cast<std::uint32_t>(size));
    });
}

}  // namespace keel::cuda::api
