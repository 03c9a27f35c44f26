#include "raw_plugin.hpp"

#include "bench_util.hpp"

#include <keel/keel.h>

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <system_error>

namespace keel_bench {
namespace {

namespace fs = std::filesystem;

void quiet_log(void*, keel_log_level, const char*) {}
std::int32_t never_logs(void*, keel_log_level) { return 0; }

// A plugin call's error as text (and the error released); "" on success.
std::string failed(keel_error* e) {
    if (e == nullptr) return "";
    std::string message = e->message;
    e->destroy(e);
    return message.empty() ? "error" : message;
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
        why = failed(entry(&host_, &api_));
        if (why.empty() && api_->kernel_launch == nullptr) why = "the plugin has no kernel_launch";
    }
    PluginCopy(const PluginCopy&) = delete;
    PluginCopy& operator=(const PluginCopy&) = delete;
    ~PluginCopy() {
        if (api_ != nullptr && api_->plugin_shutdown != nullptr) api_->plugin_shutdown();
        if (lib_ != nullptr) ::dlclose(lib_);
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    [[nodiscard]] const keel_plugin_api& api() const { return *api_; }

private:
    fs::path dir_;
    void* lib_ = nullptr;
    keel_host_services host_{};
    const keel_plugin_api* api_ = nullptr;
};

// CPU ns per call of `enqueue`, the stream synchronized every 256 calls (as
// table 6 does), after a warm-up; "" or the first error in `why`.
EnqueueCpu cpu_ns_per(const keel_plugin_api& api, keel_stream stream, int n,
                      const std::function<keel_error*()>& enqueue, std::string& why) {
    for (int i = 1; i <= n / 20 + 64 && why.empty(); ++i) why = failed(enqueue());
    if (why.empty()) why = failed(api.stream_synchronize(stream));
    double in_sync = 0;
    const auto synchronize = [&] {
        const double s0 = thread_cpu_seconds();
        why = failed(api.stream_synchronize(stream));
        in_sync += thread_cpu_seconds() - s0;
    };
    const double c0 = thread_cpu_seconds();
    for (int i = 1; i <= n && why.empty(); ++i) {
        why = failed(enqueue());
        if (why.empty() && i % 256 == 0) synchronize();
    }
    if (why.empty()) synchronize();
    const double total = thread_cpu_seconds() - c0;
    return EnqueueCpu{total / n * 1e9, (total - in_sync) / n * 1e9};
}

}  // namespace

RawEnqueue raw_enqueue_cost(const keel::Runtime& runtime, const keel::Device& device, int n) {
    RawEnqueue out;
    const std::string type = device.name().substr(0, device.name().find(':'));
    const keel::PluginInfo* info = nullptr;
    for (const keel::PluginInfo& p : runtime.plugins())
        if (p.type == type) info = &p;
    if (info == nullptr) {
        out.why_not = "no plugin of type " + type;
        return out;
    }
    PluginCopy plugin(info->path, out.why_not);
    if (!out.why_not.empty()) return out;
    const keel_plugin_api& api = plugin.api();
    const auto index = static_cast<std::uint32_t>(std::stoul(device.name().substr(type.size() + 1)));
    constexpr std::uint64_t kBytes = 256;  // as table 6's rows
    keel_device dev = nullptr;
    keel_stream stream = nullptr;
    keel_device_addr src = 0, dst = 0;
    keel_kernel fill = nullptr;
    std::string& why = out.why_not;
    why = failed(api.device_get(index, &dev));
    if (why.empty()) why = failed(api.stream_create(dev, 0, &stream));
    if (why.empty()) why = failed(api.device_alloc(dev, kBytes, &src));
    if (why.empty()) why = failed(api.device_alloc(dev, kBytes, &dst));
    if (why.empty()) why = failed(api.kernel_get(dev, "fill", &fill));
    if (why.empty())
        out.copy = cpu_ns_per(api, stream, n, [&] { return api.memcpy_d2d(stream, dst, src, kBytes); }, why);
    if (why.empty()) {
        keel_kernel_arg args[2]{};
        args[0].struct_size = args[1].struct_size = sizeof(keel_kernel_arg);
        args[0].kind = KEEL_ARG_BUFFER;
        args[0].dtype = KEEL_DTYPE_F32;
        args[0].value.buffer.addr = dst;
        args[0].value.buffer.size = kBytes;
        args[1].kind = KEEL_ARG_SCALAR;
        args[1].dtype = KEEL_DTYPE_F32;
        args[1].value.scalar.f32 = 1.0f;
        keel_launch_args launch{};
        launch.struct_size = KEEL_LAUNCH_ARGS_STRUCT_SIZE;
        launch.args = args;
        launch.arg_count = 2;
        launch.arg_struct_size = sizeof(keel_kernel_arg);
        out.launch = cpu_ns_per(api, stream, n, [&] { return api.kernel_launch(stream, fill, &launch); }, why);
    }
    if (stream != nullptr) (void)failed(api.stream_destroy(stream));
    if (src != 0) (void)failed(api.device_free(dev, src));
    if (dst != 0) (void)failed(api.device_free(dev, dst));
    return out;
}

}  // namespace keel_bench
