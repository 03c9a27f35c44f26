// The memory instances of devices: the shared one of each device (created on
// first need, with the configuration the device was given) and private ones.
#pragma once

#include <keel/device.hpp>
#include <keel/memory_config.hpp>
#include <keel/result.hpp>

#include "memory/memory_core.hpp"

#include <memory>

namespace keel::memory {

// A new private instance over `device`'s plugin.
[[nodiscard]] Result<std::shared_ptr<MemoryCore>> create_core(const Device& device,
                                                              const MemoryConfig& config);

// `device`'s shared instance. With `config`: created with it, or the
// existing one if it has exactly this configuration (FAILED_PRECONDITION
// otherwise), and remembered for instances created later. Without: the
// existing one, or a new one with the remembered configuration.
[[nodiscard]] Result<std::shared_ptr<MemoryCore>> shared_core(const Device& device,
                                                              const MemoryConfig* config);

}  // namespace keel::memory
