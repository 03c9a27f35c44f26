#include <keel/testing/tolerance.hpp>

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace keel::testing {
namespace {

// Significand digits (with the implicit bit) and the exponent of the
// smallest normal number.
struct FloatFormat {
    int precision;
    int min_exponent;
};

FloatFormat float_format(keel_dtype dtype) {
    switch (dtype) {
        case KEEL_DTYPE_F16: return {11, -14};
        case KEEL_DTYPE_BF16: return {8, -126};
        case KEEL_DTYPE_F32: return {24, -126};
        case KEEL_DTYPE_F64: return {53, -1022};
        default: throw std::invalid_argument("ulp: not a floating-point dtype");
    }
}

std::string number(double v) {
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", v);
    return text;
}

}  // namespace

double ulp(keel_dtype dtype, double magnitude) {
    const FloatFormat f = float_format(dtype);
    const double a = std::fabs(magnitude);
    if (std::isinf(a)) return a;
    const int e = a >= std::ldexp(1.0, f.min_exponent) ? std::ilogb(a) : f.min_exponent;
    return std::ldexp(1.0, e - (f.precision - 1));
}

std::string Comparison::describe(const std::string& what) const {
    std::string s = what + ": " + std::to_string(off) + " of " + std::to_string(checked) + " elements off";
    for (const std::string& m : first_misses) s += "\n  " + m;
    return s;
}

Comparison compare_within(const std::string& what, const std::vector<double>& got,
                          const std::vector<double>& want,
                          const std::function<double(std::size_t)>& bound) {
    Comparison c;
    c.checked = want.size();
    if (got.size() != want.size()) {
        c.off = want.size() + 1;
        c.first_misses.push_back(what + " has " + std::to_string(got.size()) + " elements, expected " +
                                 std::to_string(want.size()));
        return c;
    }
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double b = bound(i);
        if (std::fabs(got[i] - want[i]) <= b) continue;
        if (c.first_misses.size() < 5)
            c.first_misses.push_back(what + "[" + std::to_string(i) + "] = " + number(got[i]) + ", expected " +
                                     number(want[i]) + " within " + number(b));
        ++c.off;
    }
    return c;
}

}  // namespace keel::testing
