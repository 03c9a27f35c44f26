#include "reduce.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace keel::comm {
namespace {

// IEEE half <-> float, round to nearest even (f16 and bf16 reduce in float,
// as NCCL does, and round once per step).
float half_to_float(std::uint16_t h) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    std::uint32_t exp = (h >> 10) & 0x1f;
    std::uint32_t mant = h & 0x3ffu;
    std::uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal: normalise
            exp = 127 - 15 + 1;
            while ((mant & 0x400u) == 0) {
                mant <<= 1;
                --exp;
            }
            bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
        }
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    return std::bit_cast<float>(bits);
}

std::uint16_t float_to_half(float f) noexcept {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    const std::uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) return sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u);  // inf, nan
    if (abs >= 0x477ff000u) return sign | 0x7c00u;                                       // overflow
    if (abs < 0x38800000u) {                                                             // subnormal or zero
        if (abs < 0x33000000u) return sign;
        const std::uint32_t exp = abs >> 23;
        const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
        const std::uint32_t shift = 126 - exp;  // 14..24
        std::uint32_t h = mant >> shift;
        const std::uint32_t rem = mant & ((1u << shift) - 1);
        const std::uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) ++h;
        return static_cast<std::uint16_t>(sign | h);
    }
    std::uint32_t h = ((abs >> 13) - ((127 - 15) << 10));
    const std::uint32_t rem = abs & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
}

float bf16_to_float(std::uint16_t b) noexcept { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

std::uint16_t float_to_bf16(float f) noexcept {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet nan
    return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

struct Sum {
    template <class T> static T apply(T a, T b) { return static_cast<T>(a + b); }
};
struct Prod {
    template <class T> static T apply(T a, T b) { return static_cast<T>(a * b); }
};
struct Max {
    template <class T> static T apply(T a, T b) { return std::max(a, b); }
};
struct Min {
    template <class T> static T apply(T a, T b) { return std::min(a, b); }
};

template <class T, class Op>
void reduce_plain(void* out, const void* a, const void* b, std::size_t n) {
    // memcpy-free typed access: the buffers are aligned staging memory.
    T* o = static_cast<T*>(out);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    for (std::size_t i = 0; i < n; ++i) o[i] = Op::apply(x[i], y[i]);
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float), class Op>
void reduce_16(void* out, const void* a, const void* b, std::size_t n) {
    auto* o = static_cast<std::uint16_t*>(out);
    const auto* x = static_cast<const std::uint16_t*>(a);
    const auto* y = static_cast<const std::uint16_t*>(b);
    for (std::size_t i = 0; i < n; ++i) o[i] = FromFloat(Op::apply(ToFloat(x[i]), ToFloat(y[i])));
}

template <class Op>
ReduceFn for_dtype(keel_dtype dtype) noexcept {
    switch (dtype) {
        case KEEL_DTYPE_F16: return &reduce_16<half_to_float, float_to_half, Op>;
        case KEEL_DTYPE_BF16: return &reduce_16<bf16_to_float, float_to_bf16, Op>;
        case KEEL_DTYPE_F32: return &reduce_plain<float, Op>;
        case KEEL_DTYPE_F64: return &reduce_plain<double, Op>;
        case KEEL_DTYPE_I8: return &reduce_plain<std::int8_t, Op>;
        case KEEL_DTYPE_I32: return &reduce_plain<std::int32_t, Op>;
        case KEEL_DTYPE_I64: return &reduce_plain<std::int64_t, Op>;
        case KEEL_DTYPE_U8: return &reduce_plain<std::uint8_t, Op>;
        case KEEL_DTYPE_U32: return &reduce_plain<std::uint32_t, Op>;
        case KEEL_DTYPE_U64: return &reduce_plain<std::uint64_t, Op>;
        default: return nullptr;
    }
}

template <class T>
void divide(void* data, std::size_t n, int divisor) {
    T* p = static_cast<T*>(data);
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(divisor));
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void divide_16(void* data, std::size_t n, int divisor) {
    auto* p = static_cast<std::uint16_t*>(data);
    for (std::size_t i = 0; i < n; ++i) p[i] = FromFloat(ToFloat(p[i]) / static_cast<float>(divisor));
}

}  // namespace



const char* reduce_name(ReduceOp op) noexcept {
    switch (op) {
        case ReduceOp::sum: return "sum";
        case ReduceOp::prod: return "prod";
        case ReduceOp::max: return "max";
        case ReduceOp::min: return "min";
        case ReduceOp::avg: return "avg";
    }
    return "invalid";
}

ReduceFn reduce_fn(keel_dtype dtype, ReduceOp op) noexcept {
    switch (op) {
        case ReduceOp::sum:
        case ReduceOp::avg: return for_dtype<Sum>(dtype);
        case ReduceOp::prod: return for_dtype<Prod>(dtype);
        case ReduceOp::max: return for_dtype<Max>(dtype);
        case ReduceOp::min: return for_dtype<Min>(dtype);
    }
    return nullptr;
}

void finish_avg(keel_dtype dtype, void* data, std::size_t n, int divisor) noexcept {
    switch (dtype) {
        case KEEL_DTYPE_F16: return divide_16<half_to_float, float_to_half>(data, n, divisor);
        case KEEL_DTYPE_BF16: return divide_16<bf16_to_float, float_to_bf16>(data, n, divisor);
        case KEEL_DTYPE_F32: return divide<float>(data, n, divisor);
        case KEEL_DTYPE_F64: return divide<double>(data, n, divisor);
        case KEEL_DTYPE_I8: return divide<std::int8_t>(data, n, divisor);
        case KEEL_DTYPE_I32: return divide<std::int32_t>(data, n, divisor);
        case KEEL_DTYPE_I64: return divide<std::int64_t>(data, n, divisor);
        case KEEL_DTYPE_U8: return divide<std::uint8_t>(data, n, divisor);
        case KEEL_DTYPE_U32: return divide<std::uint32_t>(data, n, divisor);
        case KEEL_DTYPE_U64: return divide<std::uint64_t>(data, n, divisor);
        default: return;
    }
}

}  // namespace keel::comm
