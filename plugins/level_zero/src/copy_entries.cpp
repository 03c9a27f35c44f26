// Asynchronous copies and memset. Device ranges are checked against the
// driver's allocation table first (usm.hpp). Host memory the device can
// reach is copied directly; pageable memory is staged (transfers.hpp).
#include "entries.hpp"
#include "handles.hpp"
#include "transfers.hpp"
#include "usm.hpp"

#include <keel/plugin/boundary.hpp>
#include <keel/plugin/copy_args.hpp>

#include <cstring>

namespace keel::level_zero::api {

namespace {


// `bytes` copied now into a small device-accessible buffer that the
// operation keeps until it completed.
Result<HostBufferRef> captured(Stream& s, const void* bytes, std::size_t size) {
    KEEL_TRY_ASSIGN(HostBufferRef cell, s.device().host_buffers().lend(size));
    std::memcpy(cell->data, bytes, size);
    return cell;
}

}  // namespace

keel_error* memcpy_h2d(keel_stream stream, keel_device_addr dst, const void* src, uint64_t size) noexcept {
    return plugin::entry("level_zero memcpy_h2d", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, stream_from(stream));
        if (size == 0) return ok();
        KEEL_TRY(plugin::require_non_null(src, "source"));
        KEEL_TRY(check_device_range(s->device(), dst, size, "destination"));
        KEEL_TRY_ASSIGN(const HostAccess access, host_access(s->device(), src, size, "source"));
        if (access == HostAccess::staged) return enqueue_staged_h2d(*s, dst, src, size);
        return enqueue_copy(*s, device_pointer(dst), src, size);
    });
}

keel_error* memcpy_d2h(keel_stream stream, void* dst, keel_device_addr src, uint64_t size) noexcept {
    return plugin::entry("level_zero memcpy_d2h", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, stream_from(stream));
        if (size == 0) return ok();
        KEEL_TRY(plugin::require_non_null(dst, "destination"));
        KEEL_TRY(check_device_range(s->device(), src, size, "source"));
        KEEL_TRY_ASSIGN(const HostAccess access, host_access(s->device(), dst, size, "destination"));
        if (access == HostAccess::staged) return enqueue_staged_d2h(*s, dst, src, size);
        return enqueue_copy(*s, dst, device_pointer(src), size);
    });
}

keel_error* memcpy_d2d(keel_stream stream, keel_device_addr dst, keel_device_addr src, uint64_t size) noexcept {
    return plugin::entry("level_zero memcpy_d2d", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, stream_from(stream));
        if (size == 0) return ok();
        KEEL_TRY(check_device_range(s->device(), dst, size, "destination"));
        KEEL_TRY(check_device_range(s->device(), src, size, "source"));
        KEEL_TRY(plugin::check_no_overlap(dst, src, size));
        return enqueue_copy(*s, device_pointer(dst), device_pointer(src), size);
    });
}

keel_error* memset_d8(keel_stream stream, keel_device_addr dst, uint8_t value, uint64_t size) noexcept {
    return plugin::entry("level_zero memset_d8", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, stream_from(stream));
        if (size == 0) return ok();
        KEEL_TRY(check_device_range(s->device(), dst, size, "destination"));
        return enqueue_fill(*s, device_pointer(dst), value, size);
    });
}

keel_error* memcpy_h2d_inline(keel_stream stream, keel_device_addr dst, const void* src, uint64_t size) noexcept {
    return plugin::entry("level_zero memcpy_h2d_inline", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, stream_from(stream));
        KEEL_TRY(plugin::check_inline_copy_size(size));
        if (size == 0) return ok();
        KEEL_TRY(plugin::require_non_null(src, "source"));
        KEEL_TRY(check_device_range(s->device(), dst, size, "destination"));
        // Captured now: the caller may reuse `src` as soon as this returns.
        KEEL_TRY_ASSIGN(HostBufferRef bytes, captured(*s, src, static_cast<std::size_t>(size)));
        return enqueue_copy(*s, device_pointer(dst), bytes->data, size, {bytes});
    });
}

}  // namespace keel::level_zero::api
