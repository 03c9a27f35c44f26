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

// The function for `op` on `dtype` (avg reduces as sum, between
// avg_before and avg_after); null when the pair is not supported. max and
// min return a NaN when either side is one (the same answer on every rank,
// whichever holds it).
ReduceFn reduce_fn(keel_dtype dtype, ReduceOp op) noexcept;

// avg without the sum's overflow, exact for integers (rounding toward
// zero), for a sum over `ranks` ranks of `n` elements at `data`:
//   avg_before: floats are divided by `ranks` element by element (NCCL's
//     PreMulSum: the sum stays in range wherever the mean is); integers are
//     split into quotient (left in `data`) and remainder (`remainders`,
//     n int64, null for floats);
//   then `data` is summed in its dtype and, for integers, `remainders` in
//     int64 over the ranks;
//   avg_after: integers joined again (the exact sum divided, in 128 bits).
// avg_splits: whether the dtype needs the remainders (integers).
bool avg_splits(keel_dtype dtype) noexcept;
void avg_before(keel_dtype dtype, void* data, std::int64_t* remainders, std::size_t n, int ranks) noexcept;
void avg_after(keel_dtype dtype, void* data, const std::int64_t* remainders, std::size_t n, int ranks) noexcept;
// out = avg over the `ranks` parts of `n` elements laid out one after
// another at `parts` (which floats use as scratch), computed as above.
void average_parts(keel_dtype dtype, void* out, const std::byte* parts, std::size_t n, int ranks) noexcept;

}  // namespace keel::comm
