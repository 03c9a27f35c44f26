// The kernels this plugin serves by name, as a table: one KernelDef per
// kernel, each defined in its own file under kernels/.
//
// How to add a kernel `foo`:
//   1. Write src/kernels/foo.cu (copy kernels/axpy.cu): the __global__
//      function, and a launch function that validates the arguments through
//      `args` (plugin::LaunchArgsView, or a parser of plugins/support), checks
//      every buffer lies inside a device allocation with
//      plugin::check_buffer(s)(..., ctx.inside()), then enqueues with
//      launch_kernel<foo_kernel>() from kernels/launch.cuh (never a bare
//      cudaLaunchKernel: the helper registers the kernel to be loaded before
//      keel's first use of a device, see kernel_preload.hpp). Validate
//      everything before enqueuing: on error nothing may reach the stream.
//   2. Define the table entry in that file:
//        extern const KernelDef kFooKernel{"foo", &launch_foo, false};
//   3. Add KEEL_CUDA_KERNEL(kFooKernel) to kernels/kernel_list.inc.
//   The CMake glob picks up every kernels/*.cu (re-run cmake after adding).
#pragma once

#include "device.hpp"
#include "kernel_scratch.hpp"

#include <keel/keel.h>
#include <keel/plugin/kernel_args.hpp>
#include <keel/plugin/kernel_table.hpp>
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

    // The check that a buffer lies inside one live allocation of `device`,
    // for plugin::check_buffer(s): (addr, size) -> Result<void>.
    [[nodiscard]] auto inside() const {
        return [&d = device](keel_device_addr addr, std::uint64_t size) {
            return d.allocations().check(addr, size, "buffer");
        };
    }
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

// The kernels served in this process, one handle (what a keel_kernel points
// at) per device and kernel.
using KernelRegistry = plugin::KernelTable<Device, KernelDef>;
using DeviceKernel = KernelRegistry::Handle;

// The table's kernels, sorted by name; test-only ones only when asked.
[[nodiscard]] std::vector<const KernelDef*> kernel_defs(bool with_test_kernels);

}  // namespace keel::cuda
