// The kernels this plugin serves by name. Each is a KernelDef whose launch
// function validates the keel arguments (through plugins/support, as every
// plugin does) and turns them into the arguments of one of the SPIR-V
// kernels in kernels/*.cl (layouts: kernels/keel_ze_kernels.h).
//
// How to add a kernel `foo`:
//   1. Write the OpenCL C kernel in kernels/core.cl (or a new module), and
//      its host twin runs automatically in the test driver.
//   2. Write src/kernels/foo.cpp: a launch function that validates every
//      argument with `args` and `ctx.buffer(...)` before anything is
//      enqueued, then calls ctx.launch(...); define
//        extern const KernelDef kFooKernel{"foo", &launch_foo};
//   3. Add it to kernels/kernel_list.inc and to CMakeLists.txt.
#pragma once

#include "modules.hpp"
#include "stream.hpp"

#include <keel/keel.h>
#include <keel/plugin/kernel_args.hpp>
#include <keel/result.hpp>

#include <span>
#include <string>
#include <string_view>

namespace keel::level_zero {

// What a launch function gets besides its arguments.
struct LaunchContext {
    Stream& stream;

    [[nodiscard]] Device& device() const noexcept { return stream.device(); }

    // Argument `index` as a buffer of one of `dtypes` (LaunchArgsView::buffer),
    // also checked to lie inside one device allocation of the stream's device.
    [[nodiscard]] Result<plugin::BufferArg> buffer(const plugin::LaunchArgsView& args, std::size_t index,
                                                   const char* role, std::span<const keel_dtype> dtypes = {},
                                                   bool optional = false) const;

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

// What a keel_kernel handle points at: a kernel of one device, so a launch
// can refuse a stream of another device.
struct DeviceKernel {
    const Device* device;
    const KernelDef* def;
};

// The kernels, one DeviceKernel per device and kernel. Immutable after
// construction: read from any thread; handles valid until plugin_shutdown.
class KernelRegistry {
public:
    explicit KernelRegistry(const std::vector<std::unique_ptr<Device>>& devices);
    KernelRegistry(const KernelRegistry&) = delete;
    KernelRegistry& operator=(const KernelRegistry&) = delete;
    KernelRegistry(KernelRegistry&&) = delete;
    KernelRegistry& operator=(KernelRegistry&&) = delete;
    ~KernelRegistry() = default;

    // The kernel named `name` on `device`, or null.
    [[nodiscard]] const DeviceKernel* find(const Device& device, std::string_view name) const noexcept;
    // "axpy, fill, lerp, lerp_grad": for the message of a failed lookup.
    [[nodiscard]] std::string names() const;

private:
    std::vector<std::vector<DeviceKernel>> by_device_;  // [device index][kernel]
};

// The table (registry construction) and the kernel entries' access to it.
[[nodiscard]] const KernelRegistry& kernels() noexcept;

}  // namespace keel::level_zero
