// The CPU lerp and lerp_grad kernels (signatures: docs/kernels.md). Launch
// arguments are parsed and planned by keel::plugin (lerp_args.hpp); these
// run a plan on host memory: the caller passes the host pointers of the
// plan's buffers (the CPU device's addresses are translated by the plugin).
#pragma once

#include <keel/plugin/lerp_args.hpp>
#include <keel/result.hpp>

#include <array>

namespace keel::cpu {

// f16/bf16 are UNIMPLEMENTED on the CPU device.
inline constexpr std::array<keel_dtype, 2> kLerpCpuDtypes{KEEL_DTYPE_F32, KEEL_DTYPE_F64};

// Host pointers of a lerp's buffers (w null for a scalar weight).
struct LerpHostBuffers {
    const void* x = nullptr;
    const void* y = nullptr;
    const void* w = nullptr;
    void* out = nullptr;
};

// Host pointers of a lerp_grad's buffers (w null for a scalar weight, dx /
// dy null when absent).
struct LerpGradHostBuffers {
    const void* dout = nullptr;
    const void* w = nullptr;
    void* dx = nullptr;
    void* dy = nullptr;
};

// out = x + w * (y - x) with broadcasting, spread over the cores.
[[nodiscard]] Result<void> run_lerp(const plugin::LerpPlan& plan, const LerpHostBuffers& buffers);

// dx = sum(dout * (1 - w)), dy = sum(dout * w) over broadcast dims.
// Results are bitwise reproducible: the split of the work depends only on
// the shapes, never on the number of threads.
[[nodiscard]] Result<void> run_lerp_grad(const plugin::LerpGradPlan& plan,
                                         const LerpGradHostBuffers& buffers);

}  // namespace keel::cpu
