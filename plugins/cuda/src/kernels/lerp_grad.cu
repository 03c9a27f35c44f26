// CUDA lerp_grad: dx = sum(dout * (1 - w)), dy = sum(dout * w). Passes
// without a reduction are one fused elementwise kernel (dout and w read
// once, dx and dy written once); reductions are in lerp_grad_reduce.cu.
#include "lerp.cuh"
#include "lerp_grad.cuh"
#include "lerp_strided.cuh"

namespace keel::cuda {
namespace lerp {
namespace {

using plugin::GradOutput;
using plugin::LerpGradPass;
using plugin::LerpGradPlan;

// dout, dx and dy in their own memory order; w too, or one value.
template <class T>
__global__ void __launch_bounds__(kBlockThreads)
    grad_flat_kernel(GradPointers<T> q, bool w_full, std::int64_t n) {
    using C = Compute<T>;
    using P = Pack<T>;
    constexpr int K = P::kCount;
    const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    const std::int64_t tid = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const C wv = w_full ? C(0) : (q.w ? to_compute(q.w[0]) : q.w_value);
    std::int64_t done = 0;
    if (aligned16(q.dout) && (!w_full || aligned16(q.w)) && (!q.dx || aligned16(q.dx)) &&
        (!q.dy || aligned16(q.dy))) {
        const std::int64_t packs = n / K;
        for (std::int64_t p = tid; p < packs; p += threads) {
            const P d = reinterpret_cast<const P*>(q.dout)[p];
            P w, a, b;
            if (w_full) w = reinterpret_cast<const P*>(q.w)[p];
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const C dk = to_compute(d.v[k]);
                const C wk = w_full ? to_compute(w.v[k]) : wv;
                a.v[k] = from_compute<T>(dk * (C(1) - wk));
                b.v[k] = from_compute<T>(dk * wk);
            }
            if (q.dx) reinterpret_cast<P*>(q.dx)[p] = a;
            if (q.dy) reinterpret_cast<P*>(q.dy)[p] = b;
        }
        done = packs * K;
    }
    for (std::int64_t i = done + tid; i < n; i += threads) {
        const C d = to_compute(q.dout[i]);
        const C w = w_full ? to_compute(q.w[i]) : wv;
        if (q.dx) q.dx[i] = from_compute<T>(d * (C(1) - w));
        if (q.dy) q.dy[i] = from_compute<T>(d * w);
    }
}

// dx, dy in dout's order, w broadcast in any other way.
template <class T, class Index>
__global__ void __launch_bounds__(kBlockThreads)
    grad_strided_kernel(GradPointers<T> q, StridedSpace<Index> space) {
    using C = Compute<T>;
    struct Loaded {
        C d, w;
    };
    for_each_strided<2>(
        space,
        [&](const Index (&off)[2]) {
            return Loaded{to_compute(q.dout[off[plugin::kGradDout]]), to_compute(q.w[off[plugin::kGradW]])};
        },
        [&](const Index (&off)[2], const Loaded& v) {
            const Index o = off[plugin::kGradDout];
            if (q.dx) q.dx[o] = from_compute<T>(v.d * (C(1) - v.w));
            if (q.dy) q.dy[o] = from_compute<T>(v.d * v.w);
        });
}

template <class Index, class T>
Result<void> launch_strided(GradPointers<T> q, const plugin::StridedLayout& l, cudaStream_t stream) {
    const StridedSpace<Index> s(l);
    const std::int64_t threads = static_cast<std::int64_t>(s.items) * (s.by_row ? 32 : 1);
    return launch<grad_strided_kernel<T, Index>>("lerp_grad",
                  dim3(static_cast<unsigned>(grid_blocks(threads, kBlockThreads))), dim3(kBlockThreads), stream,
                  q, s);
}

template <class T>
Result<void> enqueue_elementwise(GradPointers<T> q, const LerpGradPass& pass, cudaStream_t stream) {
    const plugin::StridedLayout& l = pass.layout;
    if (pass.dx != GradOutput::elementwise) q.dx = nullptr;
    if (pass.dy != GradOutput::elementwise) q.dy = nullptr;
    const bool w_full = q.w && l.is_identity(plugin::kGradW);
    if (l.is_identity(plugin::kGradDout) && (!q.w || w_full || l.is_uniform(plugin::kGradW))) {
        const std::int64_t blocks = grid_blocks(l.numel, kBlockThreads * Pack<T>::kCount);
        return launch<grad_flat_kernel<T>>("lerp_grad", dim3(static_cast<unsigned>(blocks)), dim3(kBlockThreads),
                      stream, q, w_full, l.numel);
    }
    return fits_32_bits(l.numel) ? launch_strided<std::uint32_t>(q, l, stream)
                                 : launch_strided<std::uint64_t>(q, l, stream);
}

template <class T>
Result<void> enqueue_typed(const LerpGradPlan& p, cudaStream_t stream, KernelScratch& scratch) {
    if (p.numel == 0) {
        // Sums over nothing.
        for (const plugin::BufferArg& g : {p.dx, p.dy}) {
            if (g.absent() || g.size == 0) continue;
            KEEL_TRY(cuda_result(cudaMemsetAsync(device_ptr<void>(g.addr), 0, g.size, stream), "lerp_grad",
                                 "zero-filling a gradient"));
        }
        return ok();
    }
    const GradPointers<T> q{device_ptr<const T>(p.dout.addr),
                            p.w.is_scalar ? nullptr : device_ptr<const T>(p.w.buffer.addr),
                            static_cast<Compute<T>>(p.w.value),
                            p.dx.absent() ? nullptr : device_ptr<T>(p.dx.addr),
                            p.dy.absent() ? nullptr : device_ptr<T>(p.dy.addr)};
    for (int i = 0; i < p.pass_count; ++i) {
        const LerpGradPass& pass = p.passes[static_cast<std::size_t>(i)];
        KEEL_TRY(pass.reduces() ? enqueue_grad_reduction(q, pass, stream, scratch)
                                : enqueue_elementwise(q, pass, stream));
    }
    return ok();
}

}  // namespace
}  // namespace lerp

Result<void> enqueue_lerp_grad(const plugin::LerpGradPlan& plan, cudaStream_t stream, KernelScratch& scratch) {
    return lerp::with_element_type(plan.dtype, "lerp_grad", [&](auto element) {
        return lerp::enqueue_typed<decltype(element)>(plan, stream, scratch);
    });
}

}  // namespace keel::cuda
