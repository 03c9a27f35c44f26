#include "keel_cuda.hpp"

#include <cstdio>
#include <cstdlib>

namespace keel::bench {

void must(keel_error* error, const char* what) {
    if (error == nullptr) return;
    std::fprintf(stderr, "keel-cuda-bench: %s failed: %s\n", what, error->message);
    keel_error_destroy(error);
    std::exit(1);
}

void must_cuda(cudaError_t error, const char* what) {
    if (error == cudaSuccess) return;
    std::fprintf(stderr, "keel-cuda-bench: %s failed: %s: %s\n", what, cudaGetErrorName(error),
                 cudaGetErrorString(error));
    std::exit(1);
}

std::unique_ptr<KeelCuda> KeelCuda::load(std::string* error) {
    auto k = std::make_unique<KeelCuda>(Key{});
    k->path_ = keel::testing::find_plugin(keel::env::Var::test_cuda_plugin, KEEL_CUDA_PLUGIN_RELATIVE, KEEL_CUDA_PLUGIN_PATH);
    // Warnings go to stderr; nothing below them is even formatted.
    keel::testing::LoadedPlugin::Options options;
    options.min_log_level = KEEL_LOG_WARN;
    options.echo_log = true;
    k->plugin_ = std::make_unique<keel::testing::LoadedPlugin>(k->path_, options);
    if (k->plugin_->init_error()) {
        *error = k->plugin_->init_error()->message;
        return nullptr;
    }
    return k;
}

KeelCuda::~KeelCuda() = default;

uint32_t KeelCuda::device_count() const {
    uint32_t n = 0;
    must(api().device_count(&n), "device_count");
    return n;
}

std::string KeelCuda::status() const {
    keel_plugin_info info{};
    info.struct_size = KEEL_PLUGIN_INFO_STRUCT_SIZE;
    must(api().plugin_info(&info), "plugin_info");
    return info.status;
}

keel_device KeelCuda::device(uint32_t index) const {
    keel_device d = nullptr;
    must(api().device_get(index, &d), "device_get");
    return d;
}

keel_kernel KeelCuda::kernel(keel_device device, const char* name) const {
    keel_kernel k = nullptr;
    must(api().kernel_get(device, name, &k), "kernel_get");
    return k;
}

}  // namespace keel::bench
