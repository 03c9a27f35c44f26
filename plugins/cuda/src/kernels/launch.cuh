// Helpers for kernel files: launch a __global__ function and get CUDA's
// error as a Result, and size a grid-stride launch.
#pragma once

#include "cuda_error.hpp"
#include "kernel_preload.hpp"
#include "kernel_registry.hpp"

#include <array>
#include <cstdint>
#include <tuple>
#include <utility>

namespace keel::cuda {

// Threads per block for the element-wise kernels.
inline constexpr unsigned kBlockSize = 256;

// Blocks for a grid-stride loop over `n` elements: enough to fill every SM
// a few times over, never more blocks than elements need.
[[nodiscard]] inline dim3 grid_for(std::uint64_t n, const LaunchContext& ctx) {
    const std::uint64_t wanted = (n + kBlockSize - 1) / kBlockSize;
    const std::uint64_t cap = static_cast<std::uint64_t>(ctx.device.sm_count()) * 8;
    const std::uint64_t blocks = wanted < cap ? wanted : cap;
    return dim3(static_cast<unsigned>(blocks > 0 ? blocks : 1));
}

// A device pointer of type T* for a validated buffer.
template <class T>
[[nodiscard]] T* device_pointer(const plugin::BufferArg& buffer) noexcept {
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(buffer.addr));
}

namespace detail {
template <class... Params, class Tuple, std::size_t... I>
cudaError_t launch_with(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream,
                        Tuple& values, std::index_sequence<I...>) {
    std::array<void*, sizeof...(Params)> pointers{static_cast<void*>(&std::get<I>(values))...};
    return cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, pointers.data(), 0, stream);
}
template <class... Params, class... Args>
[[nodiscard]] Result<void> launch_kernel_now(const LaunchContext& ctx, void (*kernel)(Params...), dim3 grid,
                                             dim3 block, Args&&... args) {
    static_assert(sizeof...(Params) == sizeof...(Args), "argument count differs from the kernel's");
    std::tuple<Params...> values(std::forward<Args>(args)...);
    return check_cuda(launch_with(kernel, grid, block, ctx.stream, values, std::index_sequence_for<Params...>{}));
}
}  // namespace detail

// Enqueues Kernel<<<grid, block, 0, ctx.stream>>>(args...), returning the
// launch's own error. cudaLaunchKernel is used instead of <<<>>> because
// <<<>>> reports through cudaGetLastError, which may hold an older error
// of the calling thread. Kernel is a template argument so that every kernel
// launched here is loaded before keel first uses a device (kernel_preload.hpp).
template <auto Kernel, class... Args>
[[nodiscard]] Result<void> launch_kernel(const LaunchContext& ctx, dim3 grid, dim3 block, Args&&... args) {
    (void)kPreloaded<Kernel>;
    return detail::launch_kernel_now(ctx, Kernel, grid, block, std::forward<Args>(args)...);
}

}  // namespace keel::cuda
