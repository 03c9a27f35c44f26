#include "kernel_preload.hpp"

#include <cuda_runtime_api.h>

#include <mutex>
#include <vector>

namespace keel::cuda {

namespace {

// Function-local statics: registration runs from other files' static
// initialisers, in no particular order relative to this file's.
std::mutex& registry_mutex() {
    static std::mutex mu;
    return mu;
}

std::vector<const void*>& registry() {
    static std::vector<const void*> kernels;
    return kernels;
}

}  // namespace

bool register_kernel_for_preload(const void* kernel) noexcept {
    try {
        std::lock_guard lock(registry_mutex());
        registry().push_back(kernel);
    } catch (...) {
        // Out of memory at library load: the kernel loads at its first launch.
    }
    return true;
}

void load_registered_kernels() noexcept {
    std::vector<const void*> kernels;
    try {
        std::lock_guard lock(registry_mutex());
        kernels = registry();
    } catch (...) {
        return;
    }
    for (const void* kernel : kernels) {
        cudaFuncAttributes attributes{};
        (void)cudaFuncGetAttributes(&attributes, kernel);
    }
}

}  // namespace keel::cuda
