// The error bounds of the lerp tests, in ulps (keel/testing/tolerance.hpp).
// `compute` is the dtype a backend computes and sums in (f32 for f16, bf16
// and f32; f64 for f64): its rounding errors are counted in its own ulps,
// the final rounding to the result's dtype in the result's.
#pragma once

#include <keel/keel.h>
#include <keel/testing/tolerance.hpp>

#include <cstdint>

namespace keel::test {

using keel::testing::compare_within;
using keel::testing::Comparison;
using keel::testing::ulp;
using keel::testing::ulps;

// One lerp element: rounded once to `dtype` (1 ulp at the result: correct
// rounding is 0.5), plus the compute type's rounding of y - x, w * (y - x),
// the sum and of a scalar weight, at the scale of the inputs,
// (|x| + |y|) * max(1, |w|), which is what they are relative to when the
// result cancels to near zero.
[[nodiscard]] double lerp_bound(keel_dtype dtype, keel_dtype compute, double expected, double input_scale);

// One lerp_grad element, a sum of `terms` products whose magnitudes add up
// to `abs_sum`: rounded once to `dtype` (1 ulp at the result), plus each
// product's rounding and the accumulation's, in the compute type at the
// scale of abs_sum: 4 ulps per level of a summation tree of depth
// ceil(log2(terms + 2)), plus 2.
[[nodiscard]] double lerp_grad_bound(keel_dtype dtype, keel_dtype compute, double expected, double abs_sum,
                                     std::int64_t terms);

}  // namespace keel::test
