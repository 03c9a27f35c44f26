// Turns the runtime facts of a plan (does this operand advance along the
// innermost dim? which gradients are wanted?) into template arguments, so
// each inner loop is compiled for exactly its case.
#pragma once

#include <keel/plugin/lerp_args.hpp>

#include <cstdint>
#include <type_traits>

namespace keel::cpu::lerp {

template <class F>
void with_bool(bool b, F&& f) {
    if (b) f(std::true_type{});
    else f(std::false_type{});
}

template <class F>
void with_grad_output(plugin::GradOutput g, F&& f) {
    using plugin::GradOutput;
    switch (g) {
        case GradOutput::absent: f(std::integral_constant<GradOutput, GradOutput::absent>{}); break;
        case GradOutput::elementwise:
            f(std::integral_constant<GradOutput, GradOutput::elementwise>{});
            break;
        case GradOutput::reduced: f(std::integral_constant<GradOutput, GradOutput::reduced>{}); break;
    }
}

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept { return (a + b - 1) / b; }

// Elements one task handles (large enough to amortise scheduling, small
// enough to balance two to a few dozen cores).
inline constexpr std::int64_t kTaskElements = std::int64_t{1} << 16;

}  // namespace keel::cpu::lerp
