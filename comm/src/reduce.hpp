// Element-wise reductions over keel dtypes, in the form Gloo calls them
// (out = a op b over n elements, out may alias a or b).
#pragma once

#include <keel/base/dtype.hpp>
#include <keel/comm.hpp>

#include <cstddef>
#include <cstdint>

namespace keel::comm {

using ReduceFn = void (*)(void* out, const void* a, const void* b, std::size_t n);

using ::keel::dtype_name;
using ::keel::dtype_size;
const char* reduce_name(ReduceOp op) noexcept;

// The function for `op` on `dtype` (avg reduces as sum: finish_avg divides
// afterwards); null when the pair is not supported.
ReduceFn reduce_fn(keel_dtype dtype, ReduceOp op) noexcept;

// Divides `n` elements at `data` by `divisor` (integers round toward zero).
void finish_avg(keel_dtype dtype, void* data, std::size_t n, int divisor) noexcept;

}  // namespace keel::comm
