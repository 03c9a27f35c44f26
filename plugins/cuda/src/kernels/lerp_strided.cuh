// Visiting every element of a broadcast layout with each operand's offset,
// for the lerp kernels whose operands are not all in their own memory order.
// Long innermost dims go by warp: a warp takes a segment of one row, works
// out the row's offsets once (divisions over the outer dims only), and its
// lanes walk the columns. Short innermost dims go by thread, each element's
// offsets from its index. Either way each lane loads kBatch elements before
// storing any result, to keep enough loads in flight.
#pragma once

#include "lerp_device.cuh"

#include <utility>

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
// Elements each lane has in flight: their loads are all issued before any
// result is stored (a store may alias a later load as far as the compiler
// knows, so it would otherwise wait for each load in turn).
inline constexpr int kBatch = 4;

// For every element of `s`, with off[op] the offset of operand op (op < OPS):
// v = load(off), then store(off, v). Work is spread over the whole grid.
template <int OPS, class Index, class Load, class Store>
__device__ __forceinline__ void for_each_strided(const StridedSpace<Index>& s, Load&& load, Store&& store) {
    using V = decltype(load(std::declval<const Index (&)[OPS]>()));
    const Index threads = static_cast<Index>(gridDim.x) * blockDim.x;
    const Index tid = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
    const DeviceLayout<Index>& l = s.layout;
    if (!s.by_row) {
        for (Index i0 = tid; i0 < s.numel; i0 += threads * kBatch) {
            Index off[kBatch][OPS];
            V v[kBatch];
#pragma unroll
            for (int k = 0; k < kBatch; ++k) {
                const Index i = i0 + k * threads;
                if (i < s.numel) {
                    l.offsets(i, l.rank, off[k]);
                    v[k] = load(off[k]);
                }
            }
#pragma unroll
            for (int k = 0; k < kBatch; ++k)
                if (i0 + k * threads < s.numel) store(off[k], v[k]);
        }
        return;
    }
    const int last = l.rank - 1;
    const Index lane = threadIdx.x & 31u;
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
        for (Index cb = c0 + lane; cb < c1; cb += 32 * kBatch) {
            Index off[kBatch][OPS];
            V v[kBatch];
#pragma unroll
            for (int k = 0; k < kBatch; ++k) {
                const Index c = cb + k * 32;
                if (c < c1) {
                    for (int op = 0; op < OPS; ++op) off[k][op] = base[op] + c * l.stride[op][last];
                    v[k] = load(off[k]);
                }
            }
#pragma unroll
            for (int k = 0; k < kBatch; ++k)
                if (cb + k * 32 < c1) store(off[k], v[k]);
        }
    }
}
#endif

}  // namespace keel::cuda::lerp
