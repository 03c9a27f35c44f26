// The transfers every copy entry is made of: a device-side copy or fill,
// and copies between the device and host memory Level Zero does not know
// (pageable: std::vector, malloc), done so that they keep the ABI's promise:
// the host memory is read (h2d) or written (d2h) when the copy executes, in
// stream order, and enqueueing never blocks.
//
// The Level Zero specification requires both sides of
// zeCommandListAppendMemoryCopy to be accessible by the device; pageable
// memory is not. So the transfer goes through keel::staging's
// PageableStaging: blocks of zeMemAllocHost memory, host steps run by the
// stream's host worker, the host copies split among copy threads and
// overlapped with the device copy of the previous chunk. When the staging
// capacity is used up by copies in flight, a pageable copy fails with
// KEEL_STATUS_OUT_OF_MEMORY (enqueueing nothing). Pinned memory (host_alloc)
// never takes this path.
#pragma once

#include "stream.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>
#include <keel/staging/pageable_staging.hpp>

#include <cstdint>
#include <memory>

namespace keel::level_zero {

// Host memory the device can copy from and to, for staging blocks.
[[nodiscard]] std::unique_ptr<staging::PinnedMemory> ze_pinned_memory(ze_context_handle_t context);

[[nodiscard]] Result<void> enqueue_staged_h2d(Stream& stream, keel_device_addr dst, const void* src,
                                              std::uint64_t size);
[[nodiscard]] Result<void> enqueue_staged_d2h(Stream& stream, void* dst, keel_device_addr src, std::uint64_t size);

// A copy of `size` bytes from `src` to `dst` on the stream's command list
// (both device-accessible).
[[nodiscard]] Result<void> enqueue_copy(Stream& stream, void* dst, const void* src, std::uint64_t size,
                                        Keep keep = {});

// `size` bytes of device memory set to `value`. The one-byte pattern lives
// in a buffer the fill keeps, whenever the driver reads it.
[[nodiscard]] Result<void> enqueue_fill(Stream& stream, void* dst, std::uint8_t value, std::uint64_t size);

}  // namespace keel::level_zero
