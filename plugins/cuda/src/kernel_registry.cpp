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

Result<plugin::BufferArg> LaunchContext::buffer(const plugin::LaunchArgsView& args, std::size_t index,
                                                const char* role, std::span<const keel_dtype> dtypes,
                                                bool optional) const {
    KEEL_TRY_ASSIGN(plugin::BufferArg b, args.buffer(index, role, dtypes, optional));
    if (b.absent()) return b;
    Result<void> inside = device.allocations().check(b.addr, b.size, "buffer");
    if (!inside.ok())
        return Error(inside.error().code(), "[" + args.kernel_name() + "] argument " + std::to_string(index) +
                                                " (" + role + "): " + inside.error().message());
    return b;
}

KernelRegistry::KernelRegistry(const std::vector<std::unique_ptr<Device>>& devices, bool with_test_kernels) {
    for (const KernelDef* def : kKernelTable)
        if (with_test_kernels || !def->test_only) defs_.push_back(def);
    std::sort(defs_.begin(), defs_.end(),
              [](const KernelDef* a, const KernelDef* b) { return std::string_view(a->name) < b->name; });
    for (const auto& device : devices) {
        std::vector<DeviceKernel> kernels;
        for (const KernelDef* def : defs_) kernels.push_back(DeviceKernel{device.get(), def});
        by_device_.push_back(std::move(kernels));
    }
}

const DeviceKernel* KernelRegistry::find(const Device& device, std::string_view name) const noexcept {
    if (device.index() >= by_device_.size()) return nullptr;
    for (const DeviceKernel& k : by_device_[device.index()])
        if (name == k.def->name) return &k;
    return nullptr;
}

std::string KernelRegistry::names() const {
    std::string out;
    for (const KernelDef* def : defs_) {
        if (!out.empty()) out += ", ";
        out += def->name;
    }
    return out;
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
        KEEL_TRY_ASSIGN(Stream * s, stream_from(stream));
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
