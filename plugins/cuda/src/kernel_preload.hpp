// Loading this plugin's kernels before keel enqueues anything on a device.
//
// CUDA loads a kernel lazily, at its first launch, by default since CUDA
// 12.2 (CUDA_MODULE_LOADING=LAZY), and "loading kernels might require
// context synchronization" (CUDA C++ Programming Guide, Lazy Loading): the
// first launch of a kernel may wait for every stream of the device. keel's
// launches and inline copies must never wait (keel.h, "Enqueueing never
// blocks"): a stream held by a host function that waits for the caller's
// next step would deadlock the first launch behind it. So every kernel
// launched through kernels/launch.cuh, lerp_device.cuh or inline_copy.cu is
// registered here at library load, and Device loads them all the first time
// keel makes the device current, before keel has a stream on it.
#pragma once

namespace keel::cuda {

// Adds a __global__ function (its host stub's address) to the kernels
// loaded on each device's first use. Returns true; meant for static
// initialisers (see kPreloaded).
bool register_kernel_for_preload(const void* kernel) noexcept;

// Loads every registered kernel on the current device (cudaFuncGetAttributes
// loads a lazily loaded kernel). Errors are ignored: a kernel that cannot
// load (no image for this GPU) reports it at its launch.
void load_registered_kernels() noexcept;

// Odr-using kPreloaded<&kernel> registers `kernel` when the library loads.
template <auto Kernel>
inline const bool kPreloaded = register_kernel_for_preload(reinterpret_cast<const void*>(Kernel));

}  // namespace keel::cuda
