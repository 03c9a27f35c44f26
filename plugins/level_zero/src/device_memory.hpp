// Device memory from zeMemAllocDevice, for device_alloc and ipc_memory_alloc.
#pragma once

#include "device.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstdint>

namespace keel::level_zero {

// `size` bytes of `d`, with `next` as the descriptor's pNext chain (null, or
// an extension such as ze_external_memory_export_desc_t). INVALID_ARGUMENT
// for 0 bytes, OUT_OF_MEMORY beyond the largest allocation.
[[nodiscard]] Result<keel_device_addr> allocate_device_memory(const Device& d, std::uint64_t size, const void* next);

}  // namespace keel::level_zero
