// The kernels this plugin serves by name. Each is a KernelDef whose launch
// function validates the keel arguments (through plugins/support, as every
// plugin does) and turns them into the arguments of one of the SPIR-V
// kernels in kernels/*.cl (layouts: kernels/keel_ze_kernels.h).
//
// How to add a kernel `foo`:
//   1. Write the OpenCL C kernel in kernels/core.cl (or a new module), and
//      its host twin runs automatically in the test driver.
//   2. Write src/kernels/foo.cpp: a launch function that validates every
//      argument with `args` (or a parser of plugins/support) and checks its
//      buffers with plugin::check_buffer(s)(..., ctx.inside()) before
//      anything is enqueued, then calls ctx.launch(...); define
//        extern const KernelDef kFooKernel{"foo", &launch_foo};
//   3. Add it to kernels/kernel_list.inc and to CMakeLists.txt.
#pragma once

#include "modules.hpp"
#include "stream.hpp"
#include "usm.hpp"

#include <keel/keel.h>
#include <keel/plugin/kernel_args.hpp>
#include <keel/plugin/kernel_table.hpp>
#include <keel/result.hpp>

#include <span>
#include <string>
#include <string_view>

namespace keel::level_zero {

// What a launch function gets besides its arguments.
struct LaunchContext {
    Stream& stream;

    [[nodiscard]] Device& device() const noexcept { return stream.device(); }

    // The check that a buffer lies inside one device allocation of the
    // stream's device, for plugin::check_buffer(s): (addr, size) -> Result<void>.
    [[nodiscard]] auto inside() const {
        return [&device = device()](keel_device_addr addr, std::uint64_t size) {
            return check_device_range(device, addr, size, "buffer");
        };
    }

    // Enqueues `kernel` of `module` over `items` work-items.
    [[nodiscard]] Result<void> launch(SpirvModule module, const char* kernel, std::uint64_t items,
                                      std::span<const KernelArgValue> args) const;
};

// Validates the arguments, then enqueues. Nothing is enqueued when an
// argument is wrong.
using KernelLaunchFn = Result<void> (*)(const LaunchContext& ctx, const plugin::LaunchArgsView& args);

// One row of the table, in static storage.
struct KernelDef {
    const char* name;
    KernelLaunchFn launch;
};

// The kernels, one handle (what a keel_kernel points at) per device and kernel.
using KernelRegistry = plugin::KernelTable<Device, KernelDef>;
using DeviceKernel = KernelRegistry::Handle;

// Every kernel this plugin serves, sorted by name.
[[nodiscard]] std::vector<const KernelDef*> kernel_defs();

// The registry of the plugin's state (plugin_state.cpp).
[[nodiscard]] const KernelRegistry& kernels() noexcept;

}  // namespace keel::level_zero
