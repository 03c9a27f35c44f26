// The former name of MemoryPool (<keel/memory_pool.hpp>), kept for one minor:
// DeviceMemory named a device's memory when it is one instance (one pool) of
// the machinery, of which a device may have several.
#pragma once

#include <keel/memory_pool.hpp>

namespace keel {

using DeviceMemory [[deprecated("keel::DeviceMemory is now keel::MemoryPool (<keel/memory_pool.hpp>)")]] = MemoryPool;

}  // namespace keel
