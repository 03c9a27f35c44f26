// What the worker does for each kind of op. Called on the stream's worker.
#pragma once

#include "op.hpp"

#include <keel/result.hpp>

#include <cstdint>

namespace keel::cpu {

class Device;

[[nodiscard]] Result<void> execute_copy(Device& device, Op& op);
[[nodiscard]] Result<void> execute_kernel(Device& device, Op& op);

}  // namespace keel::cpu
