// The kernels this plugin serves by name, as a table: one KernelDef per
// kernel, each defined in its own file under kernels/.
//
// How to add a kernel `foo`:
//   1. Write src/kernels/foo.cu (copy kernels/axpy.cu): the __global__
//      function, and a launch function that validates the arguments through
//      `args` (plugin::LaunchArgsView) and `ctx.buffer(...)`, which also
//      checks every buffer lies inside a device allocation, then enqueues
//      with launch_kernel() from kernels/launch.cuh. Validate everything
//      before enqueuing: on error nothing may reach the stream.
//   2. Define the table entry in that file:
//        extern const KernelDef kFooKernel{"foo", &launch_foo, false};
//   3. Add KEEL_CUDA_KERNEL(kFooKernel) to kernels/kernel_list.inc.
//   The CMake glob picks up every kernels/*.cu (re-run cmake after adding).
#pragma once

#include "device.hpp"
#include "kernel_scratch.hpp"

#include <keel/keel.h>
#include <keel/plugin/kernel_args.hpp>
#include <keel/result.hpp>

#include <cuda_runtime_api.h>

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace keel::cuda {

// What a kernel's launch function gets besides its arguments: where to
// enqueue it. The device is already current on the calling thread.
struct LaunchContext {
    Device& device;
    cudaStream_t stream;
    // Memory the stream's kernels reuse between launches (hold its lock()).
    KernelScratch& scratch;

    // Argument `index` as a buffer of one of `dtypes` (plugin::LaunchArgsView::buffer),
    // additionally checked to lie inside one live allocation of `device`.
    [[nodiscard]] Result<plugin::BufferArg> buffer(const plugin::LaunchArgsView& args, std::size_t index,
                                                   const char* role,
                                                   std::span<const keel_dtype> dtypes = {},
                                                   bool optional = false) const;
};

// Validates the arguments, then enqueues the kernel on ctx.stream. Returns
// an error, with nothing enqueued, when an argument is wrong.
using KernelLaunchFn = Result<void> (*)(const LaunchContext& ctx, const plugin::LaunchArgsView& args);

// One row of the table, in static storage.
struct KernelDef {
    const char* name;
    KernelLaunchFn launch;
    // Fault-injection and timing helpers for tests: served only when the
    // environment has KEEL_CUDA_TEST_KERNELS=1 at plugin initialisation.
    bool test_only;
};

// What a keel_kernel handle points at: a kernel of one device, so a launch
// can refuse a stream of another device.
struct DeviceKernel {
    const Device* device;
    const KernelDef* def;
};

// The kernels served in this process, one DeviceKernel per device and
// kernel. Immutable after construction, so it may be read from any thread;
// the handles stay valid until it is destroyed (plugin_shutdown).
class KernelRegistry {
public:
    KernelRegistry(const std::vector<std::unique_ptr<Device>>& devices, bool with_test_kernels);
    KernelRegistry(const KernelRegistry&) = delete;
    KernelRegistry& operator=(const KernelRegistry&) = delete;
    KernelRegistry(KernelRegistry&&) = delete;
    KernelRegistry& operator=(KernelRegistry&&) = delete;
    ~KernelRegistry() = default;

    // The kernel named `name` on `device`, or null.
    [[nodiscard]] const DeviceKernel* find(const Device& device, std::string_view name) const noexcept;
    // "axpy, fill, noop": for the message of a failed lookup.
    [[nodiscard]] std::string names() const;

private:
    std::vector<const KernelDef*> defs_;                 // sorted by name
    std::vector<std::vector<DeviceKernel>> by_device_;   // [device index][kernel]
};

}  // namespace keel::cuda
