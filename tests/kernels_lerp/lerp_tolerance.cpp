#include "lerp_tolerance.hpp"

#include <keel/testing/tolerance.hpp>

#include <cmath>

namespace keel::test {

double lerp_bound(keel_dtype dtype, keel_dtype compute, double expected, double input_scale) {
    return ulps(dtype, 1, expected) + ulps(compute, 4, input_scale);
}

double lerp_grad_bound(keel_dtype dtype, keel_dtype compute, double expected, double abs_sum,
                       std::int64_t terms) {
    const double depth = std::ceil(std::log2(static_cast<double>(terms) + 2));
    return ulps(dtype, 1, expected) + ulps(compute, 4 * depth + 2, abs_sum);
}

}  // namespace keel::test
