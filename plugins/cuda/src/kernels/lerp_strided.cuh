// Visiting every element of a broadcast layout with each operand's offset,
// for the lerp kernels whose operands are not all in their own memory order.
// Long innermost dims go by warp: a warp takes a segment of one row, works
// out the row's offsets once (divisions over the outer dims only), and its
// lanes walk the columns. Short innermost dims go by thread, each element's
// offsets from its index.
#pragma once

#include "lerp_device.cuh"

namespace keel::cuda::lerp {

// Columns one warp handles per segment of a row.
inline constexpr std::int64_t kSegment = 512;
// Innermost dims at least this long go by warp.
inline constexpr std::int64_t kMinRowForWarps = 64;

template <class Index>
struct StridedSpace {
    using Divisor = typename DeviceLayout<Index>::Divisor;
    DeviceLayout<Index> layout;
    Index numel = 0;
    bool by_row = false;
    Index inner = 1;            // size of the innermost dim
    Index segments = 1;         // segments per row
    Divisor segments_div{};     // division by `segments`
    Index items = 0;            // rows * segments (by_row) or numel

    StridedSpace() = default;
    explicit StridedSpace(const plugin::StridedLayout& l)
        : layout(l), numel(static_cast<Index>(l.numel)) {
        inner = static_cast<Index>(l.inner_size());
        by_row = l.rank >= 1 && l.inner_size() >= kMinRowForWarps;
        if (by_row) {
            segments = static_cast<Index>((l.inner_size() + kSegment - 1) / kSegment);
            segments_div = Divisor(segments);
            items = static_cast<Index>(l.numel / l.inner_size()) * segments;
        } else {
            items = numel;
        }
    }
};

#if defined(__CUDACC__)
// Calls f(off) for every element of `s`, off[op] the offset of operand op
// (op < OPS); work is spread over the whole grid.
template <int OPS, class Index, class F>
__device__ __forceinline__ void for_each_strided(const StridedSpace<Index>& s, F&& f) {
    const Index threads = static_cast<Index>(gridDim.x) * blockDim.x;
    const Index tid = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
    const DeviceLayout<Index>& l = s.layout;
    if (!s.by_row) {
        for (Index i = tid; i < s.numel; i += threads) {
            Index off[OPS];
            l.offsets(i, l.rank, off);
            f(off);
        }
        return;
    }
    const int last = l.rank - 1;
    const unsigned lane = threadIdx.x & 31u;
    for (Index item = tid / 32; item < s.items; item += threads / 32) {
        Index row, seg;
        if constexpr (DeviceLayout<Index>::kFast) {
            s.segments_div.divmod(item, row, seg);
        } else {
            row = item / s.segments;
            seg = item - row * s.segments;
        }
        Index base[OPS];
        l.offsets(row, last, base);
        const Index c0 = seg * static_cast<Index>(kSegment);
        const Index c1 = c0 + static_cast<Index>(kSegment) < s.inner ? c0 + static_cast<Index>(kSegment) : s.inner;
#pragma unroll 4
        for (Index c = c0 + lane; c < c1; c += 32) {
            Index off[OPS];
            for (int op = 0; op < OPS; ++op) off[op] = base[op] + c * l.stride[op][last];
            f(off);
        }
    }
}
#endif

}  // namespace keel::cuda::lerp
