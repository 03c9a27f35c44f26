// What the worker does for each kind of op, and the checker bookkeeping of
// an op at enqueue. Called on the stream's worker (execute_*) or under the
// queue lock (register_op_with_checker).
#pragma once

#include "op.hpp"

#include <keel/result.hpp>

#include <cstdint>

namespace keel::cpu {

class Device;

[[nodiscard]] Result<void> execute_copy(Device& device, Op& op);
[[nodiscard]] Result<void> execute_kernel(Device& device, Op& op);
void register_op_with_checker(Device& device, Op& op, std::uint64_t stream_id);

}  // namespace keel::cpu
