// The signature of every kernel keel defines (docs/kernels.md), with what
// each buffer parameter's kernel does to it. Every plugin serving a kernel
// uses these, so that intent is written once for all devices.
#pragma once

#include <keel/plugin/kernel_signature.hpp>

namespace keel::plugin::signatures {

namespace detail {
inline constexpr ParamSpec kFill[] = {{"out", Intent::out}, {"value", Intent::none}};
inline constexpr ParamSpec kAxpy[] = {{"alpha", Intent::none}, {"x", Intent::in}, {"y", Intent::inout}};
inline constexpr ParamSpec kLerp[] = {{"x", Intent::in},           {"y", Intent::in},
                                      {"w", Intent::in},           {"out", Intent::out},
                                      {"x_shape", Intent::none},   {"y_shape", Intent::none},
                                      {"w_shape", Intent::none},   {"out_shape", Intent::none}};
// x and y are accepted for their shapes only: never read.
inline constexpr ParamSpec kLerpGrad[] = {{"x", Intent::none},         {"y", Intent::none},
                                          {"w", Intent::in},           {"dout", Intent::in},
                                          {"dx", Intent::out},         {"dy", Intent::out},
                                          {"x_shape", Intent::none},   {"y_shape", Intent::none},
                                          {"w_shape", Intent::none},   {"dout_shape", Intent::none}};
}  // namespace detail

// fill(out, value): out[i] = value.
inline constexpr KernelSignature fill{"fill", detail::kFill};
// axpy(alpha, x, y): y = alpha * x + y.
inline constexpr KernelSignature axpy{"axpy", detail::kAxpy};
// lerp(x, y, w, out, shapes...): out = x + w * (y - x); w may be a scalar.
inline constexpr KernelSignature lerp{"lerp", detail::kLerp};
// lerp_grad(x, y, w, dout, dx, dy, shapes...): the gradients of lerp.
inline constexpr KernelSignature lerp_grad{"lerp_grad", detail::kLerpGrad};

}  // namespace keel::plugin::signatures
