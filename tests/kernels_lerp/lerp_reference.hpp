// A float64 host reference for lerp / lerp_grad with NumPy broadcasting,
// written independently of the kernels' planning (naive index arithmetic),
// plus host encoding of every lerp dtype.
#pragma once

#include <keel/keel.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace keel::test {

using Dims = std::vector<std::int64_t>;

[[nodiscard]] std::int64_t numel(const Dims& d);
[[nodiscard]] std::string dims_string(const Dims& d);
// NumPy broadcast of the given shapes (they must be compatible).
[[nodiscard]] Dims broadcast(const std::vector<Dims>& shapes);

// Rounds `values` to `dtype` and returns their bytes (round to nearest even).
[[nodiscard]] std::vector<std::byte> encode(keel_dtype dtype, const std::vector<double>& values);
[[nodiscard]] std::vector<double> decode(keel_dtype dtype, const std::vector<std::byte>& bytes);
// Values exactly representable in `dtype`: uniform in [lo, hi), then rounded.
[[nodiscard]] std::vector<double> random_values(keel_dtype dtype, std::int64_t n, double lo,
                                                double hi, std::mt19937_64& rng);
// `value` rounded to the nearest value of `dtype` (through f32 for the
// 16-bit types, as the kernels do).
[[nodiscard]] double round_to(keel_dtype dtype, double value);

// The weight of a case: a scalar, or a tensor of `shape` with `values`.
struct RefWeight {
    std::optional<double> scalar;
    Dims shape;
    std::vector<double> values;
};

struct RefLerp {
    Dims shape;
    std::vector<double> out;
    std::vector<double> scale;  // |x| + |y| per element: error bounds scale with it
};
[[nodiscard]] RefLerp reference_lerp(const Dims& xs, const std::vector<double>& x, const Dims& ys,
                                     const std::vector<double>& y, const RefWeight& w);

struct RefGrad {
    std::vector<double> dx, dy;
    std::vector<double> dx_abs, dy_abs;  // sums of |term|: error bounds scale with them
    std::vector<std::int64_t> dx_terms, dy_terms;  // terms summed into each element
};
[[nodiscard]] RefGrad reference_lerp_grad(const Dims& xs, const Dims& ys, const RefWeight& w,
                                          const Dims& dout_shape, const std::vector<double>& dout);

}  // namespace keel::test
