// The launch signatures of the `lerp` and `lerp_grad` kernels (see
// docs/kernels.md), parsed, validated and planned here once so that every
// plugin accepts and rejects exactly the same launches; a plugin only runs
// the plan. Plans are plain data (copyable, shareable read-only).
#pragma once

#include <keel/plugin/broadcast.hpp>
#include <keel/plugin/kernel_args.hpp>

#include <array>
#include <cstdint>
#include <span>

namespace keel::plugin {

// Dtypes lerp is defined for; each plugin passes the subset it implements
// (a lerp dtype outside that subset is UNIMPLEMENTED, any other INVALID_ARGUMENT).
inline constexpr std::array<keel_dtype, 4> kLerpDtypes{KEEL_DTYPE_F16, KEEL_DTYPE_BF16,
                                                       KEEL_DTYPE_F32, KEEL_DTYPE_F64};

// The weight: a tensor broadcast like x and y, or one value (kept in a
// register by the kernels).
struct LerpWeight {
    bool is_scalar = false;
    double value = 0.0;  // when is_scalar
    BufferArg buffer;    // when !is_scalar
};

// Operands of LerpPlan::layout. A scalar weight is an operand with stride 0
// everywhere, so layouts do not depend on the weight's kind.
enum LerpOperand : int { kLerpOut = 0, kLerpX = 1, kLerpY = 2, kLerpW = 3 };

// out = lerp(x, y, w) over out's shape.
struct LerpPlan {
    keel_dtype dtype = KEEL_DTYPE_INVALID;
    BufferArg x, y, out;
    LerpWeight w;
    StridedLayout layout;  // operands: LerpOperand
};

// What one gradient output gets in a pass.
enum class GradOutput : std::uint8_t {
    absent,       // not computed in this pass
    elementwise,  // same shape as dout: written at dout's offsets
    reduced,      // summed over broadcast dims: the pass's reduction target
};

// Operands of LerpGradPass::layout: dout, the weight, and (when the pass
// reduces) the reduced gradient, dense in its own shape.
enum LerpGradOperand : int { kGradDout = 0, kGradW = 1, kGradTarget = 2 };

// One pass over dout. Both gradients come from the same pass whenever they
// can (no reduction, one reduction, or two reductions to the same shape);
// only two reductions to different shapes take two passes.
struct LerpGradPass {
    GradOutput dx = GradOutput::absent;
    GradOutput dy = GradOutput::absent;
    StridedLayout layout;       // over dout's shape; operands: LerpGradOperand
    ReductionLayout reduction;  // split of `layout` when reduces()

    [[nodiscard]] bool reduces() const noexcept {
        return dx == GradOutput::reduced || dy == GradOutput::reduced;
    }
};

// dx = sum(dout * (1 - w)), dy = sum(dout * w), each over the dims that x
// (resp. y) was broadcast along.
struct LerpGradPlan {
    keel_dtype dtype = KEEL_DTYPE_INVALID;
    BufferArg dout, dx, dy;  // dx / dy absent (addr 0, size 0): not computed
    LerpWeight w;
    std::int64_t numel = 0;  // elements of dout; 0 means: fill present gradients with zeros
    int pass_count = 0;
    std::array<LerpGradPass, 2> passes;
};

// The buffer arguments of each kernel, for check_buffers (kernel_args.hpp)
// after planning.
inline constexpr std::array<BufferRole, 4> kLerpBuffers{{{0, "x"}, {1, "y"}, {2, "w"}, {3, "out"}}};
inline constexpr std::array<BufferRole, 6> kLerpGradBuffers{
    {{0, "x"}, {1, "y"}, {2, "w"}, {3, "dout"}, {4, "dx"}, {5, "dy"}}};

// lerp(x, y, w, out, x_shape, y_shape, w_shape, out_shape).
[[nodiscard]] Result<LerpPlan> plan_lerp(const LaunchArgsView& args,
                                         std::span<const keel_dtype> implemented);

// lerp_grad(x, y, w, dout, dx, dy, x_shape, y_shape, w_shape, dout_shape).
[[nodiscard]] Result<LerpGradPlan> plan_lerp_grad(const LaunchArgsView& args,
                                                  std::span<const keel_dtype> implemented);

}  // namespace keel::plugin
