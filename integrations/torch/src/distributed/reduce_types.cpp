#include "reduce_types.hpp"

#include <c10/util/Exception.h>

#include <optional>

namespace keel_torch {
namespace {

const char* op_name(c10d::ReduceOp::RedOpType op) {
    switch (op) {
        case c10d::ReduceOp::SUM: return "SUM";
        case c10d::ReduceOp::AVG: return "AVG";
        case c10d::ReduceOp::PRODUCT: return "PRODUCT";
        case c10d::ReduceOp::MIN: return "MIN";
        case c10d::ReduceOp::MAX: return "MAX";
        case c10d::ReduceOp::BAND: return "BAND";
        case c10d::ReduceOp::BOR: return "BOR";
        case c10d::ReduceOp::BXOR: return "BXOR";
        case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
        default: return "an unknown ReduceOp";
    }
}

std::optional<keel_dtype> element_dtype(at::ScalarType type) {
    switch (type) {
        case at::kFloat: return KEEL_DTYPE_F32;
        case at::kDouble: return KEEL_DTYPE_F64;
        case at::kHalf: return KEEL_DTYPE_F16;
        case at::kBFloat16: return KEEL_DTYPE_BF16;
        case at::kChar: return KEEL_DTYPE_I8;
        case at::kInt: return KEEL_DTYPE_I32;
        case at::kLong: return KEEL_DTYPE_I64;
        case at::kByte: return KEEL_DTYPE_U8;
        case at::kBool: return KEEL_DTYPE_U8;
        case at::kComplexFloat: return KEEL_DTYPE_F32;
        case at::kComplexDouble: return KEEL_DTYPE_F64;
        default: return std::nullopt;
    }
}

}  // namespace

Reduction reduction_of(const c10d::ReduceOp& op, at::ScalarType type, const char* where) {
    const c10d::ReduceOp::RedOpType kind = op.op_;
    std::optional<keel::ReduceOp> reduce;
    switch (kind) {
        case c10d::ReduceOp::SUM: reduce = keel::ReduceOp::sum; break;
        case c10d::ReduceOp::AVG: reduce = keel::ReduceOp::avg; break;
        case c10d::ReduceOp::PRODUCT: reduce = keel::ReduceOp::prod; break;
        case c10d::ReduceOp::MIN: reduce = keel::ReduceOp::min; break;
        case c10d::ReduceOp::MAX: reduce = keel::ReduceOp::max; break;
        default: break;
    }
    TORCH_CHECK(reduce.has_value(), "[", where, "] the keel backend cannot reduce with ", op_name(kind),
                ": keel::Communicator has SUM, AVG, PRODUCT, MIN and MAX only");
    const std::optional<keel_dtype> dtype = element_dtype(type);
    TORCH_CHECK(dtype.has_value(), "[", where, "] the keel backend cannot reduce ", c10::toString(type),
                " tensors (keel reduces float, double, half, bfloat16, int8, int32, int64, uint8, bool, "
                "complex64 and complex128)");
    if (type == at::kBool) {
        TORCH_CHECK(kind != c10d::ReduceOp::AVG, "[", where, "] AVG of bool tensors is not defined");
        if (kind == c10d::ReduceOp::SUM) reduce = keel::ReduceOp::max;
        if (kind == c10d::ReduceOp::PRODUCT) reduce = keel::ReduceOp::min;
    }
    if (at::isComplexType(type))
        TORCH_CHECK(kind == c10d::ReduceOp::SUM || kind == c10d::ReduceOp::AVG, "[", where, "] ",
                    op_name(kind), " of complex tensors is not defined (SUM and AVG are)");
    return {*dtype, *reduce};
}

}  // namespace keel_torch
