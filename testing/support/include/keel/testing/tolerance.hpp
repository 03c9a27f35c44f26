// Tolerances in units of a dtype: a bound is a number of ulps (the spacing
// of the dtype's numbers) at a magnitude, never a bare relative error, so
// f16 and bf16 are judged by their own precision and values near zero by
// the subnormal spacing rather than by a relative bound that shrinks to 0.
//
// Every comparison of a kernel's result with a reference goes through
// ulp(): one definition for every dtype and every plugin.
#pragma once

#include <keel/keel.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace keel::testing {

// The spacing of `dtype`'s numbers at |magnitude|: 2^(e - p + 1) for
// 2^e <= |magnitude| < 2^(e+1), and the subnormal spacing below the
// smallest normal number (so ulp(0) is the smallest positive subnormal).
// f16 2^-24 at and below 2^-14; bf16 and f32 2^-149; f64 2^-1074.
[[nodiscard]] double ulp(keel_dtype dtype, double magnitude);

// k ulps of `dtype` at |magnitude|.
[[nodiscard]] inline double ulps(keel_dtype dtype, double k, double magnitude) {
    return k * ulp(dtype, magnitude);
}

// The outcome of comparing results with a reference under a bound per
// element: how many are off, and the first few, described.
struct Comparison {
    std::size_t checked = 0;
    std::size_t off = 0;
    std::vector<std::string> first_misses;  // at most 5

    [[nodiscard]] bool ok() const noexcept { return off == 0; }
    // "dy: 3 of 1000 elements off; dy[12] = ..., expected ... within ..."
    [[nodiscard]] std::string describe(const std::string& what) const;
};

// |got[i] - want[i]| <= bound(i) for every i (NaN never passes; sizes must
// match, a mismatch counts as every element off).
[[nodiscard]] Comparison compare_within(const std::string& what, const std::vector<double>& got,
                                        const std::vector<double>& want,
                                        const std::function<double(std::size_t)>& bound);

}  // namespace keel::testing
