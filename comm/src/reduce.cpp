#include "reduce.hpp"

#include <keel/base/half.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>

namespace keel::comm {
namespace {

// f16 and bf16 reduce in float, as NCCL does, and round once per step.

struct Sum {
    template <class T> static T apply(T a, T b) { return static_cast<T>(a + b); }
};
struct Prod {
    template <class T> static T apply(T a, T b) { return static_cast<T>(a * b); }
};
// A NaN wins, whichever side it comes from: std::max(a, b) returns `a`
// when the two do not compare, so the answer depended on which rank's
// element came first (and ranks reduce in different orders).
template <class T>
bool is_nan(T x) noexcept {
    if constexpr (std::is_floating_point_v<T>) return x != x;
    else return false;
}
struct Max {
    template <class T> static T apply(T a, T b) { return is_nan(a) ? a : is_nan(b) ? b : std::max(a, b); }
};
struct Min {
    template <class T> static T apply(T a, T b) { return is_nan(a) ? a : is_nan(b) ? b : std::min(a, b); }
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

// Floats: each element divided by the rank count before the sum (NCCL's
// PreMulSum), so the sum stays in range wherever the mean is.
template <class T>
void divide_each(void* data, std::size_t n, int ranks) {
    T* p = static_cast<T*>(data);
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(ranks));
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void divide_each_16(void* data, std::size_t n, int ranks) {
    auto* p = static_cast<std::uint16_t*>(data);
    for (std::size_t i = 0; i < n; ++i) p[i] = FromFloat(ToFloat(p[i]) / static_cast<float>(ranks));
}

// Integers: x = q * ranks + r (toward zero); the quotients are summed in
// the dtype (their sum is within the range: |sum q| <= max |x|), the
// remainders in int64 (|sum r| < ranks^2).
template <class T>
void split_each(void* data, std::int64_t* remainders, std::size_t n, int ranks) {
    T* p = static_cast<T*>(data);
    const T k = static_cast<T>(ranks);
    for (std::size_t i = 0; i < n; ++i) {
        remainders[i] = static_cast<std::int64_t>(p[i] % k);
        p[i] = static_cast<T>(p[i] / k);
    }
}

// sum x = Q * ranks + R exactly (in 128 bits); the mean of values of T is a
// value of T.
template <class T>
void join_each(void* data, const std::int64_t* remainders, std::size_t n, int ranks) {
    T* p = static_cast<T*>(data);
    for (std::size_t i = 0; i < n; ++i) {
        const __int128 total = static_cast<__int128>(p[i]) * ranks + remainders[i];
        p[i] = static_cast<T>(total / ranks);
    }
}

template <class T>
void average_parts_int(void* out, const std::byte* parts, std::size_t n, int ranks, std::size_t stride) {
    T* o = static_cast<T*>(out);
    for (std::size_t i = 0; i < n; ++i) {
        __int128 total = 0;
        for (int j = 0; j < ranks; ++j) {
            T x;
            std::memcpy(&x, parts + static_cast<std::size_t>(j) * stride + i * sizeof(T), sizeof(T));
            total += x;
        }
        o[i] = static_cast<T>(total / ranks);
    }
}

bool is_float(keel_dtype d) noexcept {
    return d == KEEL_DTYPE_F16 || d == KEEL_DTYPE_BF16 || d == KEEL_DTYPE_F32 || d == KEEL_DTYPE_F64;
}

template <class F>
void with_int_type(keel_dtype d, F&& f) {
    switch (d) {
        case KEEL_DTYPE_I8: return f(std::int8_t{});
        case KEEL_DTYPE_I32: return f(std::int32_t{});
        case KEEL_DTYPE_I64: return f(std::int64_t{});
        case KEEL_DTYPE_U8: return f(std::uint8_t{});
        case KEEL_DTYPE_U32: return f(std::uint32_t{});
        case KEEL_DTYPE_U64: return f(std::uint64_t{});
        default: return;
    }
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

bool avg_splits(keel_dtype dtype) noexcept { return !is_float(dtype); }

void avg_before(keel_dtype dtype, void* data, std::int64_t* remainders, std::size_t n, int ranks) noexcept {
    switch (dtype) {
        case KEEL_DTYPE_F16: return divide_each_16<half_to_float, float_to_half>(data, n, ranks);
        case KEEL_DTYPE_BF16: return divide_each_16<bf16_to_float, float_to_bf16>(data, n, ranks);
        case KEEL_DTYPE_F32: return divide_each<float>(data, n, ranks);
        case KEEL_DTYPE_F64: return divide_each<double>(data, n, ranks);
        default:
            with_int_type(dtype, [&](auto t) { split_each<decltype(t)>(data, remainders, n, ranks); });
            return;
    }
}

void avg_after(keel_dtype dtype, void* data, const std::int64_t* remainders, std::size_t n, int ranks) noexcept {
    if (is_float(dtype)) return;
    with_int_type(dtype, [&](auto t) { join_each<decltype(t)>(data, remainders, n, ranks); });
}

void average_parts(keel_dtype dtype, void* out, const std::byte* parts, std::size_t n, int ranks) noexcept {
    const std::size_t stride = n * dtype_size(dtype);
    if (is_float(dtype)) {
        // The parts are this rank's own scratch: divided in place, then summed.
        auto* scratch = const_cast<std::byte*>(parts);
        for (int j = 0; j < ranks; ++j) avg_before(dtype, scratch + static_cast<std::size_t>(j) * stride, nullptr, n, ranks);
        const ReduceFn sum = reduce_fn(dtype, ReduceOp::sum);
        std::memcpy(out, parts, stride);
        for (int j = 1; j < ranks; ++j) sum(out, out, parts + static_cast<std::size_t>(j) * stride, n);
        return;
    }
    with_int_type(dtype, [&](auto t) { average_parts_int<decltype(t)>(out, parts, n, ranks, stride); });
}

}  // namespace keel::comm
