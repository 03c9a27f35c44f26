// The kernel table, and the kernel_get / kernel_launch entries over it.
#include "kernel_registry.hpp"

#include "entries.hpp"
#include "handles.hpp"
#include "plugin_state.hpp"
#include "usm.hpp"

#include <keel/plugin/boundary.hpp>

namespace keel::level_zero {

#define KEEL_ZE_KERNEL(symbol) extern const KernelDef symbol;
#include "kernels/kernel_list.inc"
#undef KEEL_ZE_KERNEL

namespace {

const KernelDef* const kKernelTable[] = {
#define KEEL_ZE_KERNEL(symbol) &symbol,
#include "kernels/kernel_list.inc"
#undef KEEL_ZE_KERNEL
};

}  // namespace

Result<void> LaunchContext::launch(SpirvModule module, const char* kernel, std::uint64_t items,
                                   std::span<const KernelArgValue> args) const {
    std::size_t bytes = 0;
    for (const KernelArgValue& a : args) bytes += a.size;
    const std::uint32_t limit = device().limits().max_kernel_args;
    if (limit != 0 && bytes > limit)
        return Error(KEEL_STATUS_UNIMPLEMENTED, std::string(kernel) + " takes " + std::to_string(bytes) +
                                                    " bytes of arguments; " + device().label() + " accepts " +
                                                    std::to_string(limit));
    KEEL_TRY_ASSIGN(ze_module_handle_t m, device().modules().get(module));
    return stream.launch(KernelLaunch{kernel, m, items, args});
}

std::vector<const KernelDef*> kernel_defs() { return {std::begin(kKernelTable), std::end(kKernelTable)}; }

namespace api {

keel_error* kernel_get(keel_device device, const char* name, keel_kernel* out_kernel) noexcept {
    return plugin::entry("level_zero kernel_get", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(name, "name"));
        KEEL_TRY(plugin::require_non_null(out_kernel, "out_kernel"));
        const DeviceKernel* found = kernels().find(*d, name);
        if (found == nullptr)
            return Error(KEEL_STATUS_NOT_FOUND, "no kernel '" + std::string(name) + "' on " + d->label() +
                                                    " (available: " + kernels().names() + ")");
        // Every kernel needs the core module: build it now, so that a device
        // that cannot run it says so here, with the driver's build log.
        Result<ze_module_handle_t> core = d->modules().get(SpirvModule::core);
        if (!core.ok())
            return Error(core.error().code(), "kernel '" + std::string(name) + "' on " + d->label() + ": " +
                                                  core.error().message());
        *out_kernel = reinterpret_cast<keel_kernel>(const_cast<DeviceKernel*>(found));
        return ok();
    });
}

keel_error* kernel_launch(keel_stream stream, keel_kernel kernel, const keel_launch_args* launch) noexcept {
    return plugin::entry("level_zero kernel_launch", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, stream_from(stream));
        if (kernel == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "kernel is null");
        const auto* k = reinterpret_cast<const DeviceKernel*>(kernel);
        if (k->device != &s->device())
            return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string("kernel '") + k->def->name + "' of " +
                                                           k->device->label() + " launched on a stream of " +
                                                           s->device().label());
        KEEL_TRY_ASSIGN(const plugin::LaunchArgsView args, plugin::LaunchArgsView::make(launch, k->def->name));
        return k->def->launch(LaunchContext{*s}, args);
    });
}

}  // namespace api

}  // namespace keel::level_zero
