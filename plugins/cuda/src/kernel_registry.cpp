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

KernelRegistry::KernelRegistry(bool with_test_kernels) {
    for (const KernelDef* def : kKernelTable)
        if (with_test_kernels || !def->test_only) kernels_.push_back(def);
    std::sort(kernels_.begin(), kernels_.end(),
              [](const KernelDef* a, const KernelDef* b) { return std::string_view(a->name) < b->name; });
}

const KernelDef* KernelRegistry::find(std::string_view name) const noexcept {
    for (const KernelDef* def : kernels_)
        if (name == def->name) return def;
    return nullptr;
}

std::string KernelRegistry::names() const {
    std::string out;
    for (const KernelDef* def : kernels_) {
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
        const KernelDef* def = state().kernels().find(name);
        if (def == nullptr)
            return Error(KEEL_STATUS_NOT_FOUND, "no kernel '" + std::string(name) + "' on " + d->label() +
                                                    " (available: " + state().kernels().names() + ")");
        // The handle is the table row itself: static storage, never freed.
        *out_kernel = reinterpret_cast<keel_kernel>(const_cast<KernelDef*>(def));
        return ok();
    });
}

keel_error* kernel_launch(keel_stream stream, keel_kernel kernel, const keel_launch_args* launch) noexcept {
    return plugin::entry("cuda kernel_launch", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, stream_from(stream));
        if (kernel == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "kernel is null");
        const auto* def = reinterpret_cast<const KernelDef*>(kernel);
        KEEL_TRY_ASSIGN(const plugin::LaunchArgsView args, plugin::LaunchArgsView::make(launch, def->name));
        KEEL_TRY(s->device().make_current());
        return def->launch(LaunchContext{s->device(), s->cuda()}, args);
    });
}

}  // namespace api

}  // namespace keel::cuda
