// The launch signatures of `fill` and `axpy` (docs/kernels.md), parsed and
// validated here once so that every plugin accepts and rejects exactly the
// same launches; a plugin then checks the buffers against its own
// allocations (check_buffer in kernel_args.hpp) and enqueues.
#pragma once

#include <keel/plugin/kernel_args.hpp>

#include <cstdint>

namespace keel::plugin {

// fill(out: buffer f32, value: scalar f32 or f64): out[i] = value.
struct FillArgs {
    BufferArg out;
    float value = 0;
    std::uint64_t count = 0;  // elements of out
};
[[nodiscard]] Result<FillArgs> parse_fill(const LaunchArgsView& args);

// axpy(alpha: scalar f32 or f64, x: buffer f32, y: buffer f32 of x's size):
// y = alpha * x + y.
struct AxpyArgs {
    float alpha = 0;
    BufferArg x, y;
    std::uint64_t count = 0;  // elements of x and y
};
[[nodiscard]] Result<AxpyArgs> parse_axpy(const LaunchArgsView& args);

}  // namespace keel::plugin
