// Device-side building blocks of the CUDA lerp kernels: element types and
// their compute type, 16-byte packed loads, warp sums, launch geometry.
#pragma once

#include "kernel_preload.hpp"
#include "lerp_index.cuh"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

namespace keel::cuda::lerp {

// Arithmetic happens in Compute<T>: f32 for f16/bf16/f32, f64 for f64.
template <class T> struct ComputeOf { using type = float; };
template <> struct ComputeOf<double> { using type = double; };
template <class T> using Compute = typename ComputeOf<T>::type;

__device__ __forceinline__ float to_compute(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_compute(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_compute(float v) { return v; }
__device__ __forceinline__ double to_compute(double v) { return v; }

template <class T> __device__ __forceinline__ T from_compute(Compute<T> v);
template <> __device__ __forceinline__ __half from_compute<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_compute<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float from_compute<float>(float v) { return v; }
template <> __device__ __forceinline__ double from_compute<double>(double v) { return v; }

// x + w * (y - x), exact at w == 1 (PyTorch's form); a select, not a branch.
template <class C>
__device__ __forceinline__ C lerp_value(C x, C y, C w) {
    const C d = y - x;
    return w < C(0.5) ? x + w * d : y - d * (C(1) - w);
}

// 16 bytes of T, loaded and stored as one vector access.
template <class T>
struct alignas(16) Pack {
    static constexpr int kCount = 16 / static_cast<int>(sizeof(T));
    T v[kCount];
};

__device__ __forceinline__ bool aligned16(const void* p) {
    return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}

template <class C>
__device__ __forceinline__ C warp_sum(C v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

inline constexpr int kBlockThreads = 256;
inline constexpr int kWarpsPerBlock = kBlockThreads / 32;

// Blocks for a grid-stride loop over `work` items of `per_block` each:
// enough to fill every SM a few times, never more than the work.
std::int64_t grid_blocks(std::int64_t work, std::int64_t per_block);

// A CUDA error as a keel error: "[where] what: cudaErrorX: text".
[[nodiscard]] Result<void> cuda_result(cudaError_t e, const char* where, const char* what);

namespace detail {
template <class... Params, class... Args>
[[nodiscard]] Result<void> launch_now(const char* where, void (*kernel)(Params...), dim3 grid, dim3 block,
                                      cudaStream_t stream, Args&&... args) {
    static_assert(sizeof...(Params) == sizeof...(Args), "argument count differs from the kernel's");
    std::tuple<Params...> values(std::forward<Args>(args)...);
    std::array<void*, sizeof...(Params)> pointers = std::apply(
        [](auto&... v) { return std::array<void*, sizeof...(Params)>{static_cast<void*>(&v)...}; }, values);
    return cuda_result(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, pointers.data(), 0, stream),
                       where, "kernel launch");
}
}  // namespace detail

// Enqueues Kernel<<<grid, block, 0, stream>>>(args...) and returns this
// launch's own error (cudaLaunchKernel, not <<<>>>: the latter reports
// through cudaGetLastError, which may hold an older error of the thread).
// Kernel is a template argument so that it is loaded before keel first uses
// a device (kernel_preload.hpp).
template <auto Kernel, class... Args>
[[nodiscard]] Result<void> launch(const char* where, dim3 grid, dim3 block, cudaStream_t stream, Args&&... args) {
    (void)kPreloaded<Kernel>;
    return detail::launch_now(where, Kernel, grid, block, stream, std::forward<Args>(args)...);
}

// Element type of a keel dtype, handed to `f` as a value of that type.
template <class F>
Result<void> with_element_type(keel_dtype dtype, const char* where, F&& f) {
    switch (dtype) {
        case KEEL_DTYPE_F16: return f(__half{});
        case KEEL_DTYPE_BF16: return f(__nv_bfloat16{});
        case KEEL_DTYPE_F32: return f(float{});
        case KEEL_DTYPE_F64: return f(double{});
        default:
            return Error(KEEL_STATUS_UNIMPLEMENTED,
                         std::string("[") + where + "] dtype not implemented on CUDA");
    }
}

template <class T>
T* device_ptr(keel_device_addr addr) {
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(addr));
}

}  // namespace keel::cuda::lerp
