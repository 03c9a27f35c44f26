// The CPU lerp and lerp_grad kernels (signatures: docs/kernels.md). Launch
// arguments are parsed and planned by keel::plugin (lerp_args.hpp); these
// run a plan on host memory, where the CPU device's addresses point.
#pragma once

#include <keel/plugin/lerp_args.hpp>
#include <keel/result.hpp>

#include <array>

namespace keel::cpu {

// f16/bf16 are UNIMPLEMENTED on the CPU device.
inline constexpr std::array<keel_dtype, 2> kLerpCpuDtypes{KEEL_DTYPE_F32, KEEL_DTYPE_F64};

// out = x + w * (y - x) with broadcasting; every core the process may use.
[[nodiscard]] Result<void> run_lerp(const plugin::LerpPlan& plan);

// dx = sum(dout * (1 - w)), dy = sum(dout * w) over broadcast dims.
// Results are bitwise reproducible: the split of the work depends only on
// the shapes, never on the number of threads.
[[nodiscard]] Result<void> run_lerp_grad(const plugin::LerpGradPlan& plan);

}  // namespace keel::cpu
