// The boxed CPU fallback of privateuseone, which also keeps the inventory of
// the operators that fell back (what keel ran no kernel of its own for).
#pragma once

#include <ATen/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace keel_torch {

// Runs `op` on host mirrors of its keel storages with the CPU kernel (the
// operator's own, redispatched to the CPU key). Whatever the schema says,
// every storage the kernel changed is written back and every output is a
// keel tensor; a host tensor of more than 0 dims among keel tensors is an
// error, as on CUDA. Notes the operator's name.
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// The same with another host computation in place of the CPU kernel: it
// finds the operator's arguments on the stack (host tensors) and leaves its
// returns there.
void run_on_host(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                 const std::function<void(torch::jit::Stack*)>& cpu_kernel);

// A keel tensor on `device` with the values (and, where dense, the
// strides) of a host tensor.
[[nodiscard]] at::Tensor upload_output(const at::Tensor& host, c10::Device device);

// Routes every aten operator that has a CPU kernel of its own but would run
// a generic decomposition on privateuseone (CompositeExplicitAutograd) to
// the fallback, so that it runs the CPU kernel, as CPU tensors do. Views
// and operators keel implements keep their kernels. Returns their names.
std::vector<std::string> route_cpu_kernels();

// Calls, bytes copied each way and the time (ns) spent mirroring, in the
// CPU kernel and writing back, over the fallbacks since the last reset.
[[nodiscard]] std::vector<std::pair<std::string, std::int64_t>> fallback_counters();
void reset_fallback_counters();

// The operators that fell back since the last reset, sorted: "aten::mm".
[[nodiscard]] std::vector<std::string> fallback_inventory();
void reset_fallback_inventory();

}  // namespace keel_torch
