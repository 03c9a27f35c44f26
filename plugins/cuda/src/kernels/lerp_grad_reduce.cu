// CUDA lerp_grad passes that sum dx and/or dy over broadcast dims, reading
// dout and w once and writing a gradient of dout's shape in the same pass.
//   row kernel    (innermost dim reduced): one warp per (output, split),
//                 lanes along the rows, a warp-shuffle sum at the end.
//   column kernel (innermost dim kept): a block per 32 outputs and a split,
//                 8 warps stride the reduced rows, a fixed-order sum of the
//                 8 partials in shared memory.
// Too few outputs to fill the GPU: the reduced dims are split (by shape
// alone), each split writes a partial sum to the stream's scratch memory and
// counts its arrival; the last to arrive for an output adds that output's
// partials in a fixed order (a fixed tree over fixed positions), so sums are
// the same on every run whichever split finishes last. One kernel, no
// allocation per launch, no atomic adds of values, nothing of dout's size
// materialised.
#include "lerp_grad.cuh"

namespace keel::cuda::lerp {
namespace {

using plugin::GradOutput;
using plugin::LerpGradPass;
using plugin::ReductionLayout;

// Row kernel: aim for this many warps in flight, each summing at least
// kRowMinTerms terms.
constexpr std::int64_t kRowTargetWarps = 8192;
constexpr std::int64_t kRowMinTerms = 512;
// Column kernel: aim for this many blocks, each thread summing at least
// kColumnMinRows / 8 rows.
constexpr std::int64_t kColumnTargetBlocks = 1024;
constexpr std::int64_t kColumnMinRows = 64;

template <class T, class Index>
struct ReduceArgs {
    using C = Compute<T>;
    using Divisor = typename DeviceLayout<Index>::Divisor;
    GradPointers<T> q;   // dx / dy here: gradients written elementwise, else null
    T* out_x;            // reduced dx (null if dx is not reduced in this pass)
    T* out_y;
    C* part_x;           // partial sums [split][target] when splits > 1, else null
    C* part_y;
    unsigned* arrivals;  // splits > 1: arrivals per output (row) or per 32 (column), left zero
    DeviceLayout<Index> outer, reduce;  // operands: dout, w, target
    Index inner;
    Divisor inner_div;
    Index w_inner_stride;
    Index targets;
    Index splits;
    Index rows;    // reduce.numel
    Index terms;   // row kernel: terms per output
    Index chunk;   // row kernel: terms per split; column kernel: rows per split
};

template <class Index>
__device__ __forceinline__ Index imin(Index a, Index b) { return a < b ? a : b; }

template <class Index, class Divisor>
__device__ __forceinline__ void divmod_by(const Divisor& d, Index n, Index& q, Index& r) {
    if constexpr (DeviceLayout<Index>::kFast) {
        d.divmod(n, q, r);
    } else {
        q = n / d;
        r = n - q * d;
    }
}

// Terms each lane loads before it stores or adds any (see kBatch in
// lerp_strided.cuh: stores would otherwise serialise the loads).
inline constexpr int kTermBatch = 4;

// dout and w at one element, in the compute type.
template <class T, class Index>
__device__ __forceinline__ void load_term(const ReduceArgs<T, Index>& a, Index od, Index ow, Compute<T>& d,
                                          Compute<T>& w) {
    d = to_compute(a.q.dout[od]);
    w = a.q.w ? to_compute(a.q.w[ow]) : a.q.w_value;
}

// One term of each gradient: writes the elementwise ones, adds the others.
template <class T, class Index>
__device__ __forceinline__ void add_term(const ReduceArgs<T, Index>& a, Index od, Compute<T> d, Compute<T> w,
                                         Compute<T>& sx, Compute<T>& sy) {
    using C = Compute<T>;
    const C gx = d * (C(1) - w), gy = d * w;
    if (a.q.dx) a.q.dx[od] = from_compute<T>(gx);
    if (a.q.dy) a.q.dy[od] = from_compute<T>(gy);
    sx += gx;
    sy += gy;
}

template <class T, class Index>
__device__ __forceinline__ void store(const ReduceArgs<T, Index>& a, Index target, Index split,
                                      Compute<T> sx, Compute<T> sy) {
    if (a.part_x) a.part_x[split * a.targets + target] = sx;
    else if (a.out_x) a.out_x[target] = from_compute<T>(sx);
    if (a.part_y) a.part_y[split * a.targets + target] = sy;
    else if (a.out_y) a.out_y[target] = from_compute<T>(sy);
}

template <class T, class Index>
__device__ __forceinline__ void store_final(const ReduceArgs<T, Index>& a, Index target, Compute<T> sx,
                                            Compute<T> sy) {
    if (a.out_x) a.out_x[target] = from_compute<T>(sx);
    if (a.out_y) a.out_y[target] = from_compute<T>(sy);
}

// Counts one more split of `counter` as stored (its stores fenced first by
// the caller); true for the last of `splits`, which then resets the counter
// for the stream's next launch once it has read the partials.
__device__ __forceinline__ bool arrive_last(unsigned* counter, unsigned splits) {
    return atomicAdd(counter, 1u) == splits - 1;
}

// Partial sum `split` of output `target` (written by other blocks: read
// past L1).
template <class C, class Index>
__device__ __forceinline__ C partial(const C* part, Index split, Index targets, Index target) {
    return part ? __ldcg(&part[split * targets + target]) : C(0);
}

template <class T, class Index>
__global__ void __launch_bounds__(kBlockThreads) grad_row_reduce_kernel(ReduceArgs<T, Index> a) {
    using C = Compute<T>;
    const Index lane = threadIdx.x & 31u;
    const Index warps = static_cast<Index>(gridDim.x) * kWarpsPerBlock;
    const Index items = a.targets * a.splits;
    for (Index item = (static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; item < items;
         item += warps) {
        const Index j = item / a.splits;
        const Index split = item - j * a.splits;
        Index base[2];
        a.outer.offsets(j, a.outer.rank, base);
        Index t = split * a.chunk;
        const Index t_end = imin(a.terms, t + a.chunk);
        C sx = 0, sy = 0;
        while (t < t_end) {
            // The rest of this row, or of this split if it ends first.
            Index row, col;
            divmod_by(a.inner_div, t, row, col);
            const Index seg = imin(t_end - t, a.inner - col);
            Index roff[2];
            a.reduce.offsets(row, a.reduce.rank, roff);
            const Index od = base[0] + roff[0] + col;
            const Index ow = base[1] + roff[1] + col * a.w_inner_stride;
            for (Index cb = lane; cb < seg; cb += 32 * kTermBatch) {
                C d[kTermBatch], w[kTermBatch];
#pragma unroll
                for (int k = 0; k < kTermBatch; ++k) {
                    const Index c = cb + k * 32;
                    if (c < seg) load_term(a, od + c, ow + c * a.w_inner_stride, d[k], w[k]);
                }
#pragma unroll
                for (int k = 0; k < kTermBatch; ++k)
                    if (cb + k * 32 < seg) add_term(a, od + cb + k * 32, d[k], w[k], sx, sy);
            }
            t += seg;
        }
        sx = warp_sum(sx);
        sy = warp_sum(sy);
        if (lane == 0) store(a, j, split, sx, sy);
        if (a.arrivals == nullptr) continue;
        // The last split of output j to arrive adds all of j's partials:
        // lanes take fixed splits in order, then the fixed warp tree.
        unsigned last = 0;
        if (lane == 0) {
            __threadfence();
            last = arrive_last(&a.arrivals[j], static_cast<unsigned>(a.splits));
        }
        if (!__shfl_sync(0xffffffffu, last, 0)) continue;
        __threadfence();
        C tx = 0, ty = 0;
        for (Index k = lane; k < a.splits; k += 32) {
            tx += partial(a.part_x, k, a.targets, j);
            ty += partial(a.part_y, k, a.targets, j);
        }
        tx = warp_sum(tx);
        ty = warp_sum(ty);
        if (lane == 0) {
            store_final(a, j, tx, ty);
            a.arrivals[j] = 0;
        }
    }
}

// Each lane's (x, y) added over the block's warps in warp order, through
// shared memory; the sums are in warp 0. Callers sync before reusing it.
template <class C>
__device__ __forceinline__ void sum_over_warps(C (&xs)[kWarpsPerBlock][33], C (&ys)[kWarpsPerBlock][33],
                                               unsigned warp, unsigned lane, C& x, C& y) {
    xs[warp][lane] = x;
    ys[warp][lane] = y;
    __syncthreads();
    if (warp != 0) return;
    x = xs[0][lane];
    y = ys[0][lane];
    for (int k = 1; k < kWarpsPerBlock; ++k) {
        x += xs[k][lane];
        y += ys[k][lane];
    }
}

template <class T, class Index>
__global__ void __launch_bounds__(kBlockThreads) grad_column_reduce_kernel(ReduceArgs<T, Index> a) {
    using C = Compute<T>;
    __shared__ C shared_x[kWarpsPerBlock][33];
    __shared__ C shared_y[kWarpsPerBlock][33];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const Index j = static_cast<Index>(blockIdx.x) * 32 + lane;
    const Index split = blockIdx.y;
    C sx = 0, sy = 0;
    if (j < a.targets) {
        Index jo, c;
        divmod_by(a.inner_div, j, jo, c);
        Index base[2];
        a.outer.offsets(jo, a.outer.rank, base);
        const Index od = base[0] + c, ow = base[1] + c * a.w_inner_stride;
        const Index r0 = split * a.chunk, r1 = imin(a.rows, r0 + a.chunk);
        for (Index rb = r0 + warp; rb < r1; rb += kWarpsPerBlock * kTermBatch) {
            Index o[kTermBatch];
            C d[kTermBatch], w[kTermBatch];
#pragma unroll
            for (int k = 0; k < kTermBatch; ++k) {
                const Index r = rb + k * kWarpsPerBlock;
                if (r < r1) {
                    Index roff[2];
                    a.reduce.offsets(r, a.reduce.rank, roff);
                    o[k] = od + roff[0];
                    load_term(a, o[k], ow + roff[1], d[k], w[k]);
                }
            }
#pragma unroll
            for (int k = 0; k < kTermBatch; ++k)
                if (rb + k * kWarpsPerBlock < r1) add_term(a, o[k], d[k], w[k], sx, sy);
        }
    }
    sum_over_warps(shared_x, shared_y, warp, lane, sx, sy);
    if (warp == 0 && j < a.targets) {
        store(a, j, split, sx, sy);
        if (a.arrivals) __threadfence();
    }
    if (a.arrivals == nullptr) return;
    // The last split of these 32 outputs to arrive adds their partials: warp
    // w takes splits w, w + 8, ... in order, then warp 0 adds the 8 sums.
    __shared__ bool last;
    __syncthreads();
    if (threadIdx.x == 0) last = arrive_last(&a.arrivals[blockIdx.x], gridDim.y);
    __syncthreads();
    if (!last) return;
    __threadfence();
    C tx = 0, ty = 0;
    if (j < a.targets) {
        for (Index k = warp; k < a.splits; k += kWarpsPerBlock) {
            tx += partial(a.part_x, k, a.targets, j);
            ty += partial(a.part_y, k, a.targets, j);
        }
    }
    sum_over_warps(shared_x, shared_y, warp, lane, tx, ty);
    if (warp == 0 && j < a.targets) store_final(a, j, tx, ty);
    if (threadIdx.x == 0) a.arrivals[blockIdx.x] = 0;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

template <class T, class Index>
Result<void> launch_reduction(const GradPointers<T>& q, const LerpGradPass& pass, cudaStream_t stream,
                              KernelScratch& scratch) {
    using C = Compute<T>;
    using Divisor = typename DeviceLayout<Index>::Divisor;
    const ReductionLayout& r = pass.reduction;
    ReduceArgs<T, Index> a{};
    a.q = q;
    a.q.dx = pass.dx == GradOutput::elementwise ? q.dx : nullptr;
    a.q.dy = pass.dy == GradOutput::elementwise ? q.dy : nullptr;
    a.out_x = pass.dx == GradOutput::reduced ? q.dx : nullptr;
    a.out_y = pass.dy == GradOutput::reduced ? q.dy : nullptr;
    a.outer = DeviceLayout<Index>(r.outer);
    a.reduce = DeviceLayout<Index>(r.reduce);
    a.inner = static_cast<Index>(r.inner);
    a.inner_div = Divisor(static_cast<Index>(r.inner));
    a.w_inner_stride = static_cast<Index>(r.inner_stride[plugin::kGradW]);
    const std::int64_t targets = r.targets(), rows = r.reduce.numel;
    a.targets = static_cast<Index>(targets);
    a.rows = static_cast<Index>(rows);

    std::int64_t splits = 1, chunk = 0;
    if (r.inner_reduced) {
        const std::int64_t terms = r.terms_per_target();
        splits = std::clamp<std::int64_t>(ceil_div(kRowTargetWarps, targets), 1,
                                          std::max<std::int64_t>(1, terms / kRowMinTerms));
        chunk = ceil_div(terms, splits);
        splits = ceil_div(terms, chunk);
        a.terms = static_cast<Index>(terms);
    } else {
        splits = std::clamp<std::int64_t>(ceil_div(kColumnTargetBlocks, ceil_div(targets, 32)), 1,
                                          std::max<std::int64_t>(1, rows / kColumnMinRows));
        chunk = ceil_div(rows, splits);
        splits = ceil_div(rows, chunk);
    }
    a.splits = static_cast<Index>(splits);
    a.chunk = static_cast<Index>(chunk);

    const auto launch_kernel = [&]() -> Result<void> {
        if (r.inner_reduced) {
            const std::int64_t blocks = grid_blocks(targets * splits, kWarpsPerBlock);
            return launch<grad_row_reduce_kernel<T, Index>>("lerp_grad", dim3(static_cast<unsigned>(blocks)),
                          dim3(kBlockThreads), stream, a);
        }
        const dim3 grid(static_cast<unsigned>(ceil_div(targets, 32)), static_cast<unsigned>(splits));
        return launch<grad_column_reduce_kernel<T, Index>>("lerp_grad", grid, dim3(kBlockThreads), stream, a);
    };
    if (splits == 1) return launch_kernel();

    // Counters first (zero between launches), then the partial sums.
    const std::int64_t counters = r.inner_reduced ? targets : ceil_div(targets, 32);
    const std::size_t counter_bytes = static_cast<std::size_t>(ceil_div(counters * 4, 256) * 256);
    const std::int64_t per_channel = splits * targets;
    const int channels = (a.out_x ? 1 : 0) + (a.out_y ? 1 : 0);
    const std::size_t bytes = counter_bytes + static_cast<std::size_t>(per_channel * channels) * sizeof(C);
    // Held until the kernel is enqueued: no other thread may replace the
    // memory under it.
    const auto held = scratch.lock();
    KEEL_TRY_ASSIGN(void* memory, scratch.get(stream, bytes));
    a.arrivals = static_cast<unsigned*>(memory);
    C* parts = reinterpret_cast<C*>(static_cast<char*>(memory) + counter_bytes);
    if (a.out_x) a.part_x = parts, parts += per_channel;
    if (a.out_y) a.part_y = parts;
    return launch_kernel();
}

}  // namespace

template <class T>
Result<void> enqueue_grad_reduction(const GradPointers<T>& q, const LerpGradPass& pass, cudaStream_t stream,
                                    KernelScratch& scratch) {
    return fits_32_bits(pass.layout.numel) ? launch_reduction<T, std::uint32_t>(q, pass, stream, scratch)
                                           : launch_reduction<T, std::uint64_t>(q, pass, stream, scratch);
}

template Result<void> enqueue_grad_reduction<__half>(const GradPointers<__half>&, const LerpGradPass&, cudaStream_t, KernelScratch&);
template Result<void> enqueue_grad_reduction<__nv_bfloat16>(const GradPointers<__nv_bfloat16>&, const LerpGradPass&, cudaStream_t, KernelScratch&);
template Result<void> enqueue_grad_reduction<float>(const GradPointers<float>&, const LerpGradPass&, cudaStream_t, KernelScratch&);
template Result<void> enqueue_grad_reduction<double>(const GradPointers<double>&, const LerpGradPass&, cudaStream_t, KernelScratch&);

}  // namespace keel::cuda::lerp
