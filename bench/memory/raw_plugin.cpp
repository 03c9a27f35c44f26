#include "raw_plugin.hpp"

#include <keel/c_error.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace keel_bench {

namespace fs = std::filesystem;

namespace {

void quiet_log(void*, keel_log_level, const char*) {}
std::int32_t never_logs(void*, keel_log_level) { return 0; }
void hold_worker(void* gate, keel_status) { static_cast<WorkerGate*>(gate)->hold(); }

}  // namespace

std::string error_text(keel_error* e) {
    const keel::Result<void> taken = keel::take_c_error(e);
    return taken.ok() ? "" : taken.error().message();
}

// The plugin file, copied, loaded and initialised; shut down and unloaded
// when it goes.
class PluginCopy {
public:
    PluginCopy(const fs::path& original, std::string& why) {
        dir_ = fs::temp_directory_path() / ("keel-bench-plugin-" + std::to_string(::getpid()));
        std::error_code ec;
        fs::create_directories(dir_, ec);
        const fs::path copy = dir_ / original.filename();
        if (ec || !fs::copy_file(original, copy, fs::copy_options::overwrite_existing, ec) || ec) {
            why = "cannot copy " + original.string() + ": " + ec.message();
            return;
        }
        lib_ = ::dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib_ == nullptr) {
            why = ::dlerror();
            return;
        }
        auto entry = reinterpret_cast<keel_plugin_entry_fn>(::dlsym(lib_, KEEL_PLUGIN_ENTRY_NAME));
        if (entry == nullptr) {
            why = "no " + std::string(KEEL_PLUGIN_ENTRY_NAME);
            return;
        }
        host_.struct_size = KEEL_HOST_SERVICES_STRUCT_SIZE;
        host_.abi_major = KEEL_ABI_VERSION_MAJOR;
        host_.abi_minor = KEEL_ABI_VERSION_MINOR;
        host_.log = quiet_log;
        host_.log_enabled = never_logs;
        why = error_text(entry(&host_, &api_));
        if (why.empty() && (api_->kernel_launch == nullptr || api_->stream_enqueue_host_func == nullptr))
            why = "the plugin has no kernel_launch or stream_enqueue_host_func";
    }
    PluginCopy(const PluginCopy&) = delete;
    PluginCopy& operator=(const PluginCopy&) = delete;
    PluginCopy(PluginCopy&&) = delete;
    PluginCopy& operator=(PluginCopy&&) = delete;
    ~PluginCopy() {
        if (api_ != nullptr && api_->plugin_shutdown != nullptr) api_->plugin_shutdown();
        if (lib_ != nullptr) ::dlclose(lib_);
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    [[nodiscard]] const keel_plugin_api* api() const { return api_; }

private:
    fs::path dir_;
    void* lib_ = nullptr;
    keel_host_services host_{};
    const keel_plugin_api* api_ = nullptr;
};

RawStream::RawStream(const keel::Runtime& runtime, const keel::Device& device) {
    const std::string type = device.name().substr(0, device.name().find(':'));
    const keel::PluginInfo* info = nullptr;
    for (const keel::PluginInfo& p : runtime.plugins())
        if (p.type == type) info = &p;
    if (info == nullptr) {
        why_not_ = "no plugin of type " + type;
        return;
    }
    plugin_ = std::make_unique<PluginCopy>(info->path, why_not_);
    if (!why_not_.empty()) return;
    api_ = plugin_->api();
    const auto index = static_cast<std::uint32_t>(std::stoul(device.name().substr(type.size() + 1)));
    std::string& why = why_not_;
    why = error_text(api_->device_get(index, &device_));
    if (why.empty()) why = error_text(api_->stream_create(device_, 0, &stream_));
    if (why.empty()) why = error_text(api_->device_alloc(device_, kBytes, &src_));
    if (why.empty()) why = error_text(api_->device_alloc(device_, kBytes, &dst_));
    if (why.empty()) why = error_text(api_->kernel_get(device_, "fill", &fill_));
    args_[0].struct_size = args_[1].struct_size = sizeof(keel_kernel_arg);
    args_[0].kind = KEEL_ARG_BUFFER;
    args_[0].dtype = KEEL_DTYPE_F32;
    args_[0].value.buffer.addr = dst_;
    args_[0].value.buffer.size = kBytes;
    args_[1].kind = KEEL_ARG_SCALAR;
    args_[1].dtype = KEEL_DTYPE_F32;
    args_[1].value.scalar.f32 = 1.0f;
    launch_.struct_size = KEEL_LAUNCH_ARGS_STRUCT_SIZE;
    launch_.args = args_;
    launch_.arg_count = 2;
    launch_.arg_struct_size = sizeof(keel_kernel_arg);
}

RawStream::~RawStream() {
    if (api_ == nullptr) return;
    if (stream_ != nullptr) (void)error_text(api_->stream_destroy(stream_));
    if (src_ != 0) (void)error_text(api_->device_free(device_, src_));
    if (dst_ != 0) (void)error_text(api_->device_free(device_, dst_));
}

std::string RawStream::hold(WorkerGate& gate) const {
    return error_text(api_->stream_enqueue_host_func(stream_, hold_worker, &gate));
}

std::string RawStream::synchronize() const { return error_text(api_->stream_synchronize(stream_)); }

}  // namespace keel_bench
