// The innermost loops of the CPU lerp kernels: one contiguous run each.
// Written as blocks of kLanes elements that load into local arrays, compute,
// then store, so GCC/Clang vectorise them at -O2 without -ffast-math or
// pragmas (the reductions keep kLanes independent partial sums, combined in
// a fixed order, so results do not depend on the vector width chosen).
// Template flags say whether an operand advances along the run (true) or
// stays at one value (broadcast along the run, or a scalar weight).
#pragma once

#include <keel/plugin/lerp_args.hpp>

#include <cstdint>
#include <cstring>

// Fully unrolls a block's fixed-length inner loop before vectorisation, so
// the block's local arrays become registers and GCC's straight-line (SLP)
// vectoriser packs them; left to itself, GCC -O2 vectorises each inner loop
// separately through the arrays in memory, at half the speed (measured).
#define KEEL_LERP_UNROLL _Pragma("GCC unroll 16")

namespace keel::cpu::lerp {

using plugin::GradOutput;

// Each term is computed in T (as the elementwise gradients are); partial
// sums of a reduction are kept in double for every dtype.
using Acc = double;

template <class T>
inline constexpr int kLanes = 64 / static_cast<int>(sizeof(T));
inline constexpr int kReduceLanes = 8;

template <class T>
struct SameSizeUint;
template <>
struct SameSizeUint<float> { using type = std::uint32_t; };
template <>
struct SameSizeUint<double> { using type = std::uint64_t; };

// x + w * (y - x), exact at w == 1: from x when w < 0.5, else from y (the
// form PyTorch uses). The choice is a bit select on the sign of w - 0.5
// rather than `?:`, because GCC at -O2 with its default -ftrapping-math will
// not vectorise a floating-point select.
template <class T>
inline T lerp_value(T x, T y, T w) {
    using U = typename SameSizeUint<T>::type;
    const T d = y - x;
    const T from_x = x + w * d;
    const T from_y = y - d * (T(1) - w);
    const T below = w - T(0.5);
    U b, fx, fy;
    std::memcpy(&b, &below, sizeof(T));
    std::memcpy(&fx, &from_x, sizeof(T));
    std::memcpy(&fy, &from_y, sizeof(T));
    const U take_x = U(0) - (b >> (sizeof(T) * 8 - 1));  // all ones when w < 0.5
    const U r = (fx & take_x) | (fy & ~take_x);
    T out;
    std::memcpy(&out, &r, sizeof(T));
    return out;
}

template <class T, bool XV, bool YV, bool WV>
void lerp_span(T* out, const T* x, const T* y, const T* w, T wv, std::int64_t n) {
    constexpr int L = kLanes<T>;
    std::int64_t i = 0;
    for (; i + L <= n; i += L) {
        T xs[L], ys[L], ws[L], r[L];
        KEEL_LERP_UNROLL
        for (int l = 0; l < L; ++l) {
            xs[l] = XV ? x[i + l] : x[0];
            ys[l] = YV ? y[i + l] : y[0];
            ws[l] = WV ? w[i + l] : wv;
        }
        KEEL_LERP_UNROLL
        for (int l = 0; l < L; ++l) r[l] = lerp_value(xs[l], ys[l], ws[l]);
        KEEL_LERP_UNROLL
        for (int l = 0; l < L; ++l) out[i + l] = r[l];
    }
    for (; i < n; ++i) out[i] = lerp_value(XV ? x[i] : x[0], YV ? y[i] : y[0], WV ? w[i] : wv);
}

// Elementwise gradients of one run: dx = dout * (1 - w), dy = dout * w
// (either may be skipped).
template <class T, bool WV, bool DX, bool DY>
void grad_span(const T* dout, const T* w, T wv, T* dx, T* dy, std::int64_t n) {
    constexpr int L = kLanes<T>;
    std::int64_t i = 0;
    for (; i + L <= n; i += L) {
        T d[L], ws[L], a[L], b[L];
        KEEL_LERP_UNROLL
        for (int l = 0; l < L; ++l) {
            d[l] = dout[i + l];
            ws[l] = WV ? w[i + l] : wv;
        }
        KEEL_LERP_UNROLL
        for (int l = 0; l < L; ++l) {
            a[l] = d[l] * (T(1) - ws[l]);
            b[l] = d[l] * ws[l];
        }
        if constexpr (DX)
            KEEL_LERP_UNROLL
            for (int l = 0; l < L; ++l) dx[i + l] = a[l];
        if constexpr (DY)
            KEEL_LERP_UNROLL
            for (int l = 0; l < L; ++l) dy[i + l] = b[l];
    }
    for (; i < n; ++i) {
        const T d = dout[i], ww = WV ? w[i] : wv;
        if constexpr (DX) dx[i] = d * (T(1) - ww);
        if constexpr (DY) dy[i] = d * ww;
    }
}

// One run of a reduction pass. Reduced gradients are summed: into the two
// scalars `sum_x`/`sum_y` (row reduction, SUM_INTO_ARRAY false) or into the
// arrays `acc_x[i]`/`acc_y[i]` (column reduction). Elementwise gradients are
// written to `dx`/`dy` (already offset like dout).
template <class T, bool WV, GradOutput DX, GradOutput DY, bool SUM_INTO_ARRAY>
void grad_reduce_span(const T* dout, const T* w, T wv, T* dx, T* dy, std::int64_t n,
                      Acc* acc_x, Acc* acc_y, Acc& sum_x, Acc& sum_y) {
    constexpr int L = kReduceLanes;
    constexpr bool RX = DX == GradOutput::reduced, RY = DY == GradOutput::reduced;
    constexpr bool EX = DX == GradOutput::elementwise, EY = DY == GradOutput::elementwise;
    Acc px[L] = {}, py[L] = {};
    std::int64_t i = 0;
    for (; i + L <= n; i += L) {
        T d[L], ws[L];
        KEEL_LERP_UNROLL
        for (int l = 0; l < L; ++l) {
            d[l] = dout[i + l];
            ws[l] = WV ? w[i + l] : wv;
        }
        if constexpr (EX) {
            T a[L];
            KEEL_LERP_UNROLL
            for (int l = 0; l < L; ++l) a[l] = d[l] * (T(1) - ws[l]);
            KEEL_LERP_UNROLL
            for (int l = 0; l < L; ++l) dx[i + l] = a[l];
        }
        if constexpr (EY) {
            T b[L];
            KEEL_LERP_UNROLL
            for (int l = 0; l < L; ++l) b[l] = d[l] * ws[l];
            KEEL_LERP_UNROLL
            for (int l = 0; l < L; ++l) dy[i + l] = b[l];
        }
        if constexpr (SUM_INTO_ARRAY) {
            if constexpr (RX)
                KEEL_LERP_UNROLL
                for (int l = 0; l < L; ++l) acc_x[i + l] += Acc(d[l] * (T(1) - ws[l]));
            if constexpr (RY)
                KEEL_LERP_UNROLL
                for (int l = 0; l < L; ++l) acc_y[i + l] += Acc(d[l] * ws[l]);
        } else {
            if constexpr (RX)
                KEEL_LERP_UNROLL
                for (int l = 0; l < L; ++l) px[l] += Acc(d[l] * (T(1) - ws[l]));
            if constexpr (RY)
                KEEL_LERP_UNROLL
                for (int l = 0; l < L; ++l) py[l] += Acc(d[l] * ws[l]);
        }
    }
    for (; i < n; ++i) {
        const T d = dout[i], ww = WV ? w[i] : wv;
        if constexpr (EX) dx[i] = d * (T(1) - ww);
        if constexpr (EY) dy[i] = d * ww;
        if constexpr (SUM_INTO_ARRAY) {
            if constexpr (RX) acc_x[i] += Acc(d * (T(1) - ww));
            if constexpr (RY) acc_y[i] += Acc(d * ww);
        } else {
            // Tail terms go to lane 0 so the combine order below stays fixed.
            if constexpr (RX) px[0] += Acc(d * (T(1) - ww));
            if constexpr (RY) py[0] += Acc(d * ww);
        }
    }
    if constexpr (!SUM_INTO_ARRAY) {
        // Pairwise combine in a fixed order.
        for (int width = L / 2; width > 0; width /= 2)
            for (int l = 0; l < width; ++l) {
                px[l] += px[l + width];
                py[l] += py[l + width];
            }
        sum_x += px[0];
        sum_y += py[0];
    }
}

}  // namespace keel::cpu::lerp
