// Index arithmetic of the CUDA lerp kernels: a coalesced layout
// (plugin::StridedLayout) turned into kernel parameters, and division by a
// layout's sizes done with a multiply and a shift on 32-bit indices.
// Compiles as plain C++ too (no device code unless __CUDACC__), so the host
// tests check the arithmetic without a GPU.
#pragma once

#include <keel/plugin/broadcast.hpp>

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define KEEL_HD __host__ __device__ __forceinline__
#else
#define KEEL_HD inline
#endif

namespace keel::cuda::lerp {

// n / d and n % d for a fixed d, for 0 <= n < 2^31 and 1 <= d < 2^31, as
// ((n * m) >> 32) >> s with m = ceil(2^(31 + ceil(log2 d)) / d) (the
// round-up method of Granlund & Montgomery, as CUTLASS's FastDivmod).
struct FastDivmod {
    std::uint32_t divisor = 1;
    std::uint32_t multiplier = 0;
    std::uint32_t shift = 0;

    FastDivmod() = default;
    explicit FastDivmod(std::uint32_t d) : divisor(d) {
        if (d <= 1) return;  // multiplier 0 marks "divide by one"
        std::uint32_t log2_ceil = 0;
        while ((std::uint64_t{1} << log2_ceil) < d) ++log2_ceil;
        const std::uint64_t p = 31 + log2_ceil;
        multiplier = static_cast<std::uint32_t>(((std::uint64_t{1} << p) + d - 1) / d);
        shift = static_cast<std::uint32_t>(p - 32);
    }

    KEEL_HD std::uint32_t div(std::uint32_t n) const {
        if (multiplier == 0) return n;
#if defined(__CUDA_ARCH__)
        return __umulhi(n, multiplier) >> shift;
#else
        return static_cast<std::uint32_t>((std::uint64_t{n} * multiplier) >> 32) >> shift;
#endif
    }
    KEEL_HD void divmod(std::uint32_t n, std::uint32_t& q, std::uint32_t& r) const {
        q = div(n);
        r = n - q * divisor;
    }
};

// A StridedLayout as kernel parameters. Index is uint32_t when every index
// and offset is below 2^31 (divisions become FastDivmod), else uint64_t.
template <class Index>
struct DeviceLayout {
    static_assert(std::is_same_v<Index, std::uint32_t> || std::is_same_v<Index, std::uint64_t>);
    static constexpr bool kFast = std::is_same_v<Index, std::uint32_t>;
    using Divisor = std::conditional_t<kFast, FastDivmod, std::uint64_t>;

    int rank = 0;
    Divisor size[plugin::kMaxRank]{};
    Index stride[plugin::kMaxOperands][plugin::kMaxRank]{};

    DeviceLayout() = default;
    explicit DeviceLayout(const plugin::StridedLayout& l) : rank(l.rank) {
        for (int d = 0; d < l.rank; ++d) {
            size[d] = Divisor(static_cast<Index>(l.size[d]));
            for (int op = 0; op < l.operands; ++op)
                stride[op][d] = static_cast<Index>(l.stride[op][d]);
        }
    }

    // Size of dim d.
    KEEL_HD Index extent(int d) const {
        if constexpr (kFast) return size[d].divisor;
        else return size[d];
    }

    KEEL_HD void divmod(int d, Index n, Index& q, Index& r) const {
        if constexpr (kFast) {
            size[d].divmod(n, q, r);
        } else {
            q = n / size[d];
            r = n - q * size[d];
        }
    }

    // Offsets of operands [0, OPS) at index `i` of the dims [0, dims).
    template <int OPS>
    KEEL_HD void offsets(Index i, int dims, Index (&off)[OPS]) const {
        for (int op = 0; op < OPS; ++op) off[op] = 0;
        for (int d = dims - 1; d >= 0; --d) {
            Index q, r;
            if (d == 0) {
                r = i;  // the outermost coordinate needs no division
                q = 0;
            } else {
                divmod(d, i, q, r);
            }
            for (int op = 0; op < OPS; ++op) off[op] += r * stride[op][d];
            i = q;
        }
    }
};

// True when every index and offset of a layout of `numel` elements fits the
// 32-bit path (FastDivmod needs values below 2^31).
inline bool fits_32_bits(std::int64_t numel) { return numel < (std::int64_t{1} << 31); }

}  // namespace keel::cuda::lerp
