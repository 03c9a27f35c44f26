// Copies between the device and host memory that CUDA has not pinned, done
// so that they keep the ABI's promise: the host memory is read (h2d) or
// written (d2h) when the copy executes, and enqueueing never blocks.
//
// CUDA's own pageable path does neither: cudaMemcpyAsync from pageable
// memory may copy the source at enqueue, and into pageable memory it
// returns only after the copy completed, so a stream held back by earlier
// work would block the caller. Here the transfer goes through keel::staging's
// PageableStaging: pinned blocks from cudaHostAlloc, host steps run by
// stream callbacks (cudaStreamAddCallback, which runs every accepted
// callback once, also after a device error), the host copies split among
// the device's copy threads and overlapped with the DMA of the previous
// chunk. Pinned memory never takes this path.
#pragma once

#include "device.hpp"

#include <keel/result.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

namespace keel::cuda {

// True when CUDA can DMA to or from [ptr, ptr + size) directly: memory from
// keel's host_alloc on `device` (a registry lookup), or memory CUDA reports
// as pinned, registered or managed (cudaPointerGetAttributes).
[[nodiscard]] bool is_dma_capable(Device& device, const void* ptr, std::uint64_t size) noexcept;

// Pinned memory for staging blocks: cudaHostAlloc (portable), cudaFreeHost.
[[nodiscard]] std::unique_ptr<staging::PinnedMemory> cuda_pinned_memory();

// Enqueue a host -> device copy from pageable `src` on `stream` (the
// device is current). OUT_OF_MEMORY, with nothing enqueued, when the
// staging capacity is used up by copies in flight (never CUDA's own
// pageable path, which may block or read `src` at enqueue).
[[nodiscard]] Result<void> enqueue_pageable_h2d(Device& device, cudaStream_t stream, void* dst,
                                                const void* src, std::uint64_t size);

// Enqueue a device -> host copy into pageable `dst`; the same.
[[nodiscard]] Result<void> enqueue_pageable_d2h(Device& device, cudaStream_t stream, void* dst,
                                                const void* src, std::uint64_t size);

}  // namespace keel::cuda
