// memcpy_h2d_inline's mechanism: the bytes travel as a kernel parameter,
// which CUDA copies at launch, so the caller may reuse `src` at once and no
// pinned staging buffer or host callback is needed.
#pragma once

#include <keel/keel.h>
#include <keel/result.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace keel::cuda {

// Enqueues a copy of `size` <= KEEL_INLINE_COPY_MAX bytes from host `src`
// to device `dst` on `stream`; `src` is read before this returns. The
// stream's device must be current.
[[nodiscard]] Result<void> enqueue_inline_copy(cudaStream_t stream, keel_device_addr dst,
                                               const void* src, std::uint32_t size);

}  // namespace keel::cuda
