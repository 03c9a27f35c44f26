// The boxed CPU fallback of privateuseone, which also keeps the inventory of
// the operators that fell back (what keel ran no kernel of its own for).
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <string>
#include <vector>

namespace keel_torch {

// Runs `op` on CPU copies of its tensors (at::native::cpu_fallback) and
// notes its name.
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// The operators that fell back since the last reset, sorted: "aten::mm".
[[nodiscard]] std::vector<std::string> fallback_inventory();
void reset_fallback_inventory();

}  // namespace keel_torch
