#include "keel_cuda.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace keel::bench {

namespace {

// KEEL_CUDA_PLUGIN, else beside this executable as in the build tree (so a
// copied build tree works), else the path it was built at.
std::string plugin_path() {
    if (const char* env = std::getenv("KEEL_CUDA_PLUGIN"); env != nullptr && *env != '\0') return env;
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const std::filesystem::path beside = exe.parent_path() / KEEL_CUDA_PLUGIN_RELATIVE;
        if (std::filesystem::exists(beside, ec)) return beside.lexically_normal().string();
    }
    return KEEL_CUDA_PLUGIN_PATH;
}

void log_to_stderr(void*, keel_log_level level, const char* message) {
    if (level >= KEEL_LOG_WARN) std::fprintf(stderr, "keel: %s\n", message);
}

int32_t warnings_only(void*, keel_log_level level) { return level >= KEEL_LOG_WARN ? 1 : 0; }

}  // namespace

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
    k->path_ = plugin_path();
    k->library_ = dlopen(k->path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (k->library_ == nullptr) {
        *error = "dlopen " + k->path_ + ": " + dlerror();
        return nullptr;
    }
    auto entry = reinterpret_cast<keel_plugin_entry_fn>(dlsym(k->library_, KEEL_PLUGIN_ENTRY_NAME));
    if (entry == nullptr) {
        *error = k->path_ + " has no " KEEL_PLUGIN_ENTRY_NAME;
        return nullptr;
    }
    k->host_.struct_size = KEEL_HOST_SERVICES_STRUCT_SIZE;
    k->host_.abi_major = KEEL_ABI_VERSION_MAJOR;
    k->host_.abi_minor = KEEL_ABI_VERSION_MINOR;
    k->host_.log = &log_to_stderr;
    k->host_.log_enabled = &warnings_only;
    if (keel_error* e = entry(&k->host_, &k->api_)) {
        *error = e->message;
        keel_error_destroy(e);
        k->api_ = nullptr;
        return nullptr;
    }
    return k;
}

KeelCuda::~KeelCuda() {
    if (api_ != nullptr) api_->plugin_shutdown();
    if (library_ != nullptr) dlclose(library_);
}

uint32_t KeelCuda::device_count() const {
    uint32_t n = 0;
    must(api_->device_count(&n), "device_count");
    return n;
}

std::string KeelCuda::status() const {
    keel_plugin_info info{};
    info.struct_size = KEEL_PLUGIN_INFO_STRUCT_SIZE;
    must(api_->plugin_info(&info), "plugin_info");
    return info.status;
}

keel_device KeelCuda::device(uint32_t index) const {
    keel_device d = nullptr;
    must(api_->device_get(index, &d), "device_get");
    return d;
}

keel_kernel KeelCuda::kernel(keel_device device, const char* name) const {
    keel_kernel k = nullptr;
    must(api_->kernel_get(device, name, &k), "kernel_get");
    return k;
}

}  // namespace keel::bench
