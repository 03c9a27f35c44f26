#include "kernel_registry.hpp"

#include <array>

namespace keel::cpu {
namespace {

constexpr KernelDef kKernels[] = {
#define KEEL_CPU_KERNEL(name) KernelDef{#name, &kernels::validate_##name},
#include "kernels/kernel_list.inc"
#undef KEEL_CPU_KERNEL
};

}  // namespace

std::span<const KernelDef> all_kernels() noexcept { return kKernels; }

const KernelDef* find_kernel(std::string_view name) noexcept {
    for (const KernelDef& k : kKernels)
        if (name == k.name) return &k;
    return nullptr;
}

bool is_kernel(const void* p) noexcept {
    for (const KernelDef& k : kKernels)
        if (p == &k) return true;
    return false;
}

}  // namespace keel::cpu
