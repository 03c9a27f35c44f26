// The shared lerp tests end to end through a plugin's C table: the plugin
// is dlopen'ed as the runtime does, buffers are device allocations, the
// kernels are found with kernel_get and run with kernel_launch on a stream.
// One instantiation per plugin built in this tree (KEEL_LERP_TEST_PLUGINS).
#include "lerp_fixture.hpp"

#include <keel/testing/loaded_plugin.hpp>

#include <sstream>

namespace keel::test {
namespace {

// Takes ownership of `e`: OK, or its code and message.
Result<void> to_result(keel_error* e) {
    auto error = keel::testing::take(e);
    if (!error) return ok();
    return Error(error->code, error->message);
}

// What the tests expect of each plugin type: its lerp dtypes. Both compute
// f16, bf16 and f32 in f32 (the CPU then sums f32 terms in f64) and f64 in
// f64 (docs/kernels.md).
struct PluginExpectations {
    std::vector<keel_dtype> dtypes;
};

PluginExpectations expectations_for(const std::string& type) {
    if (type == "cuda") return {{KEEL_DTYPE_F16, KEEL_DTYPE_BF16, KEEL_DTYPE_F32, KEEL_DTYPE_F64}};
    return {{KEEL_DTYPE_F32, KEEL_DTYPE_F64}};
}

class PluginBackend final : public LerpBackend {
public:
    PluginBackend(std::string type, const std::string& path)
        : expect_(expectations_for(type)),
          plugin_(path, keel::testing::LoadedPlugin::Options{{}, KEEL_ABI_VERSION_MAJOR, KEEL_LOG_ERROR}) {
        if (plugin_.init_error()) {
            why_ = "cannot load " + path + ": " + plugin_.init_error()->message;
            return;
        }
        api_ = &plugin_.api();
        device_ = plugin_.device();
        if (device_ == nullptr) {
            const std::string status = plugin_.status();
            why_ = type + " plugin has no device" + (status.empty() ? "" : ": " + status);
            return;
        }
        if (!to_result(api_->stream_create(device_, 0, &stream_)).ok()) {
            why_ = type + " plugin: no stream on device 0";
            stream_ = nullptr;
        }
    }
    ~PluginBackend() override {
        if (api_) {
            for (keel_device_addr a : allocations_) (void)to_result(api_->device_free(device_, a));
            if (stream_) (void)to_result(api_->stream_destroy(stream_));
        }
    }

    std::string unavailable_reason() const override { return why_; }
    std::vector<keel_dtype> dtypes() const override { return expect_.dtypes; }
    keel_dtype compute_dtype(keel_dtype d) const override {
        return d == KEEL_DTYPE_F64 ? KEEL_DTYPE_F64 : KEEL_DTYPE_F32;
    }
    keel_device_addr upload(std::span<const std::byte> bytes) override {
        if (bytes.empty()) return 0;
        keel_device_addr a = 0;
        const Result<void> r = to_result(api_->device_alloc(device_, bytes.size(), &a));
        if (!r.ok()) {
            ADD_FAILURE() << r.error().message();
            return 0;
        }
        allocations_.push_back(a);
        EXPECT_TRUE(to_result(api_->memcpy_h2d(stream_, a, bytes.data(), bytes.size())).ok());
        EXPECT_TRUE(to_result(api_->stream_synchronize(stream_)).ok());
        return a;
    }
    std::vector<std::byte> download(keel_device_addr addr, std::size_t bytes) override {
        std::vector<std::byte> out(bytes);
        if (bytes == 0) return out;
        EXPECT_TRUE(to_result(api_->memcpy_d2h(stream_, out.data(), addr, bytes)).ok());
        EXPECT_TRUE(to_result(api_->stream_synchronize(stream_)).ok());
        return out;
    }
    Result<void> launch(std::string_view kernel, const LaunchArgs& args) override {
        keel_kernel k = nullptr;
        KEEL_TRY(to_result(api_->kernel_get(device_, std::string(kernel).c_str(), &k)));
        KEEL_TRY(to_result(api_->kernel_launch(stream_, k, args.get())));
        return to_result(api_->stream_synchronize(stream_));
    }

private:
    PluginExpectations expect_;
    keel::testing::LoadedPlugin plugin_;
    const keel_plugin_api* api_ = nullptr;
    keel_device device_ = nullptr;
    keel_stream stream_ = nullptr;
    std::vector<keel_device_addr> allocations_;
    std::string why_;
};

// "cpu=/path/libkeel_cpu.so,cuda=/path/libkeel_cuda.so" -> one factory each.
std::vector<LerpBackendFactory> plugin_factories() {
    std::vector<LerpBackendFactory> out;
    std::stringstream list(KEEL_LERP_TEST_PLUGINS);
    for (std::string entry; std::getline(list, entry, ',');) {
        const std::size_t eq = entry.find('=');
        if (eq == std::string::npos) continue;
        const std::string type = entry.substr(0, eq), path = entry.substr(eq + 1);
        out.push_back({type + "_plugin", [type, path] { return std::make_unique<PluginBackend>(type, path); }});
    }
    return out;
}

INSTANTIATE_TEST_SUITE_P(
    Plugins, LerpKernel, ::testing::ValuesIn(plugin_factories()),
    [](const ::testing::TestParamInfo<LerpBackendFactory>& info) { return info.param.name; });

}  // namespace
}  // namespace keel::test
