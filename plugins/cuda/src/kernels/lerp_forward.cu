// CUDA lerp: out = x + w * (y - x) with broadcasting.
//   flat:    every operand in its own memory order, or one value (a scalar
//            weight, a [1]-shaped tensor): 16-byte packed loads and stores.
//   strided: anything else, via for_each_strided.
#include "lerp.cuh"
#include "lerp_device.cuh"
#include "lerp_strided.cuh"

namespace keel::cuda {
namespace lerp {
namespace {

using plugin::LerpPlan;

// How a flat kernel reads an operand.
enum class Flat : std::uint8_t { full, one_element, value };

template <class T>
struct FlatArgs {
    T* out;
    const T* x;
    const T* y;
    const T* w;
    Compute<T> w_value;
    Flat x_mode, y_mode, w_mode;
    std::int64_t n;
};

template <class T>
__device__ __forceinline__ Compute<T> uniform_value(const T* p, Flat mode, Compute<T> value) {
    return mode == Flat::one_element ? to_compute(p[0]) : value;
}

// Packs each thread has in flight in the flat kernel.
inline constexpr int kUnroll = 4;

template <class T>
__global__ void __launch_bounds__(kBlockThreads) lerp_flat_kernel(FlatArgs<T> a) {
    using C = Compute<T>;
    using P = Pack<T>;
    constexpr int K = P::kCount;
    const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    const std::int64_t tid = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const bool xf = a.x_mode == Flat::full, yf = a.y_mode == Flat::full, wf = a.w_mode == Flat::full;
    const C xv = xf ? C(0) : uniform_value(a.x, a.x_mode, C(0));
    const C yv = yf ? C(0) : uniform_value(a.y, a.y_mode, C(0));
    const C wv = wf ? C(0) : uniform_value(a.w, a.w_mode, a.w_value);
    std::int64_t done = 0;
    if (aligned16(a.out) && (!xf || aligned16(a.x)) && (!yf || aligned16(a.y)) &&
        (!wf || aligned16(a.w))) {
        // kUnroll packs per thread per round, every load issued before any
        // store: more bytes in flight per thread than one pack at a time.
        const std::int64_t packs = a.n / K;
        for (std::int64_t p0 = tid; p0 < packs; p0 += threads * kUnroll) {
            P xp[kUnroll], yp[kUnroll], wp[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                const std::int64_t p = p0 + u * threads;
                if (p >= packs) continue;
                if (xf) xp[u] = reinterpret_cast<const P*>(a.x)[p];
                if (yf) yp[u] = reinterpret_cast<const P*>(a.y)[p];
                if (wf) wp[u] = reinterpret_cast<const P*>(a.w)[p];
            }
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                const std::int64_t p = p0 + u * threads;
                if (p >= packs) continue;
                P r;
#pragma unroll
                for (int k = 0; k < K; ++k)
                    r.v[k] = from_compute<T>(lerp_value<C>(xf ? to_compute(xp[u].v[k]) : xv,
                                                           yf ? to_compute(yp[u].v[k]) : yv,
                                                           wf ? to_compute(wp[u].v[k]) : wv));
                reinterpret_cast<P*>(a.out)[p] = r;
            }
        }
        done = packs * K;
    }
    for (std::int64_t i = done + tid; i < a.n; i += threads)
        a.out[i] = from_compute<T>(lerp_value<C>(xf ? to_compute(a.x[i]) : xv,
                                                 yf ? to_compute(a.y[i]) : yv,
                                                 wf ? to_compute(a.w[i]) : wv));
}

template <class T, class Index>
__global__ void __launch_bounds__(kBlockThreads)
    lerp_strided_kernel(T* out, const T* x, const T* y, const T* w, Compute<T> w_value,
                        StridedSpace<Index> space) {
    using C = Compute<T>;
    struct Loaded {
        C x, y, w;
    };
    for_each_strided<4>(
        space,
        [&](const Index (&off)[4]) {
            return Loaded{to_compute(x[off[plugin::kLerpX]]), to_compute(y[off[plugin::kLerpY]]),
                          w ? to_compute(w[off[plugin::kLerpW]]) : w_value};
        },
        [&](const Index (&off)[4], const Loaded& v) {
            out[off[plugin::kLerpOut]] = from_compute<T>(lerp_value<C>(v.x, v.y, v.w));
        });
}

Flat flat_mode(const plugin::StridedLayout& l, int op, bool scalar) {
    if (scalar) return Flat::value;
    return l.is_identity(op) ? Flat::full : Flat::one_element;
}

template <class T>
Result<void> enqueue_typed(const LerpPlan& p, cudaStream_t stream) {
    const plugin::StridedLayout& l = p.layout;
    if (l.numel == 0) return ok();
    T* out = device_ptr<T>(p.out.addr);
    const T* x = device_ptr<const T>(p.x.addr);
    const T* y = device_ptr<const T>(p.y.addr);
    const T* w = p.w.is_scalar ? nullptr : device_ptr<const T>(p.w.buffer.addr);
    const auto w_value = static_cast<Compute<T>>(p.w.value);
    const auto flat_ok = [&](int op) { return l.is_identity(op) || l.is_uniform(op); };
    if (l.is_identity(plugin::kLerpOut) && flat_ok(plugin::kLerpX) && flat_ok(plugin::kLerpY) &&
        flat_ok(plugin::kLerpW)) {
        const FlatArgs<T> a{out, x, y, w, w_value,
                            flat_mode(l, plugin::kLerpX, false), flat_mode(l, plugin::kLerpY, false),
                            flat_mode(l, plugin::kLerpW, p.w.is_scalar), l.numel};
        const std::int64_t blocks = grid_blocks(l.numel, kBlockThreads * Pack<T>::kCount * kUnroll);
        return launch<lerp_flat_kernel<T>>("lerp", dim3(static_cast<unsigned>(blocks)), dim3(kBlockThreads),
                      stream, a);
    }
    const auto strided = [&](auto index) {
        using Index = decltype(index);
        const StridedSpace<Index> s(l);
        const std::int64_t threads = static_cast<std::int64_t>(s.items) * (s.by_row ? 32 : 1);
        return launch<lerp_strided_kernel<T, Index>>("lerp",
                      dim3(static_cast<unsigned>(grid_blocks(threads, kBlockThreads))), dim3(kBlockThreads),
                      stream, out, x, y, w, w_value, s);
    };
    return fits_32_bits(l.numel) ? strided(std::uint32_t{}) : strided(std::uint64_t{});
}

}  // namespace
}  // namespace lerp

Result<void> enqueue_lerp(const plugin::LerpPlan& plan, cudaStream_t stream) {
    return lerp::with_element_type(plan.dtype, "lerp", [&](auto element) {
        return lerp::enqueue_typed<decltype(element)>(plan, stream);
    });
}

}  // namespace keel::cuda
