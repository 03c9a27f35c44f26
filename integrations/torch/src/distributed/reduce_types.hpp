// How c10d's reductions and tensor dtypes map onto keel::Communicator's.
#pragma once

#include <ATen/core/Tensor.h>
#include <keel/comm.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>

namespace keel_torch {

// What keel reduces for a tensor of `type` under `op`.
struct Reduction {
    keel_dtype dtype;
    keel::ReduceOp op;
};

// The reduction, or a c10::Error saying why keel cannot do it: the bitwise
// ops (BAND, BOR, BXOR) and PREMUL_SUM (keel::Communicator has none), a
// dtype keel has no reduction for (int16, ...), MIN/MAX/PRODUCT of complex,
// AVG of bool. bool reduces as NCCL does: SUM is MAX, PRODUCT is MIN;
// complex SUM/AVG reduce the real and imaginary parts as floats.
[[nodiscard]] Reduction reduction_of(const c10d::ReduceOp& op, at::ScalarType type, const char* where);

}  // namespace keel_torch
