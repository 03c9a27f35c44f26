// The kernel table, and the kernel_get / kernel_launch entries over it.
#include "kernel_registry.hpp"

#include "entries.hpp"
#include "handles.hpp"
#include "plugin_state.hpp"

#include <keel/plugin/boundary.hpp>

#include <algorithm>

namespace keel::cuda {

#define KEEL_CUDA_KERNEL(symbol) extern const KernelDef symbol;
#include "kernels/kernel_list.inc"
#undef KEEL_CUDA_KERNEL

namespace {

const KernelDef* const kKernelTable[] = {
#define KEEL_CUDA_KERNEL(symbol) &symbol,
#include "kernels/kernel_list.inc"
#undef KEEL_CUDA_KERNEL
};

}  // namespace

std::vector<const KernelDef*> kernel_defs(bool with_test_kernels) {
    std::vector<const KernelDef*> defs;
    for (const KernelDef* def : kKernelTable)
        if (with_test_kernels || !def->test_only) defs.push_back(def);
    std::sort(defs.begin(), defs.end(),
              [](const KernelDef* a, const KernelDef* b) { return std::string_view(a->name) < b->name; });
    return defs;
}

namespace api {

keel_error* kernel_get(keel_device device, const char* name, keel_kernel* out_kernel) noexcept {
    return plugin::entry("cuda kernel_get", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(name, "name"));
        KEEL_TRY(plugin::require_non_null(out_kernel, "out_kernel"));
        const DeviceKernel* found = state().kernels().find(*d, name);
        if (found == nullptr)
            return Error(KEEL_STATUS_NOT_FOUND, "no kernel '" + std::string(name) + "' on " + d->label() +
                                                    " (available: " + state().kernels().names() + ")");
        *out_kernel = reinterpret_cast<keel_kernel>(const_cast<DeviceKernel*>(found));
        return ok();
    });
}

keel_error* kernel_launch(keel_stream stream, keel_kernel kernel, const keel_launch_args* launch) noexcept {
    return plugin::entry("cuda kernel_launch", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, enqueue_stream_from(stream));
        if (kernel == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "kernel is null");
        const auto* k = reinterpret_cast<const DeviceKernel*>(kernel);
        const KernelDef* def = k->def;
        if (k->device != &s->device())
            return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string("kernel '") + def->name + "' of " +
                                                           k->device->label() + " launched on a stream of " +
                                                           s->device().label());
        KEEL_TRY_ASSIGN(const plugin::LaunchArgsView args, plugin::LaunchArgsView::make(launch, def->name));
        KEEL_TRY(s->device().make_current());
        return def->launch(LaunchContext{s->device(), s->cuda(), s->scratch()}, args);
    });
}

}  // namespace api

}  // namespace keel::cuda
