#include "cuda_plugin_fixture.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace keel::cuda_test {

std::string plugin_library_path() {
    if (const char* env = std::getenv("KEEL_CUDA_PLUGIN"); env != nullptr && *env != '\0') return env;
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const std::filesystem::path beside = exe.parent_path() / KEEL_CUDA_PLUGIN_RELATIVE;
        if (std::filesystem::exists(beside, ec)) return beside.lexically_normal().string();
    }
    return KEEL_CUDA_PLUGIN_PATH;
}

Outcome outcome(keel_error* error) {
    Outcome out;
    if (error != nullptr) {
        out.code = error->code;
        out.message = error->message;
        keel_error_destroy(error);
    }
    return out;
}

::testing::AssertionResult ok(keel_error* error) {
    if (error == nullptr) return ::testing::AssertionSuccess();
    Outcome o = outcome(error);
    return ::testing::AssertionFailure() << "status " << o.code << ": " << o.message;
}

void CapturedLog::add(keel_log_level level, std::string line) {
    std::lock_guard lock(mutex_);
    lines_.push_back(std::to_string(static_cast<int>(level)) + " " + std::move(line));
}

std::vector<std::string> CapturedLog::lines() const {
    std::lock_guard lock(mutex_);
    return lines_;
}

keel_host_services make_host_services(CapturedLog* log) {
    keel_host_services host{};
    host.struct_size = KEEL_HOST_SERVICES_STRUCT_SIZE;
    host.abi_major = KEEL_ABI_VERSION_MAJOR;
    host.abi_minor = KEEL_ABI_VERSION_MINOR;
    host.context = log;
    host.log = [](void* context, keel_log_level level, const char* message) {
        if (context != nullptr) static_cast<CapturedLog*>(context)->add(level, message);
    };
    host.log_enabled = [](void*, keel_log_level) -> int32_t { return 1; };
    return host;
}

Library& Library::operator=(Library&& other) noexcept {
    if (this != &other) {
        if (handle_ != nullptr) dlclose(handle_);
        handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
}

Library::~Library() {
    if (handle_ != nullptr) dlclose(handle_);
}

Library Library::open(std::string* error) {
    const std::string path = plugin_library_path();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr && error != nullptr) *error = "dlopen " + path + ": " + dlerror();
    return Library(handle);
}

keel_plugin_entry_fn Library::entry() const {
    return reinterpret_cast<keel_plugin_entry_fn>(dlsym(handle_, KEEL_PLUGIN_ENTRY_NAME));
}

LoadedPlugin::~LoadedPlugin() {
    if (api_ != nullptr) api_->plugin_shutdown();
}

std::unique_ptr<LoadedPlugin> LoadedPlugin::load(std::string* error) {
    auto plugin = std::make_unique<LoadedPlugin>(Key{});
    plugin->library_ = Library::open(error);
    if (plugin->library_.handle() == nullptr) return nullptr;
    keel_plugin_entry_fn entry = plugin->library_.entry();
    if (entry == nullptr) {
        *error = "no " KEEL_PLUGIN_ENTRY_NAME " in " + plugin_library_path();
        return nullptr;
    }
    plugin->log_ = std::make_unique<CapturedLog>();
    plugin->host_ = std::make_unique<keel_host_services>(make_host_services(plugin->log_.get()));
    const keel_plugin_api* api = nullptr;
    Outcome init = outcome(entry(plugin->host_.get(), &api));
    if (init.code != KEEL_STATUS_OK) {
        *error = init.message;
        return nullptr;
    }
    plugin->api_ = api;
    return plugin;
}

uint32_t LoadedPlugin::device_count() const {
    uint32_t count = 0;
    EXPECT_TRUE(ok(api_->device_count(&count)));
    return count;
}

std::string LoadedPlugin::status() const {
    keel_plugin_info info{};
    info.struct_size = KEEL_PLUGIN_INFO_STRUCT_SIZE;
    EXPECT_TRUE(ok(api_->plugin_info(&info)));
    return info.status != nullptr ? info.status : "";
}

// ---- owners -------------------------------------------------------------

Stream::Stream(const keel_plugin_api& api, keel_device device) : api_(api) {
    EXPECT_TRUE(ok(api_.stream_create(device, 0, &stream_)));
}
Stream::~Stream() {
    if (stream_ != nullptr) {
        EXPECT_TRUE(ok(api_.stream_destroy(stream_)));
    }
}
Outcome Stream::destroy() { return outcome(api_.stream_destroy(std::exchange(stream_, nullptr))); }

Event::Event(const keel_plugin_api& api, keel_device device, uint32_t flags) : api_(api) {
    EXPECT_TRUE(ok(api_.event_create(device, flags, &event_)));
}
Event::~Event() {
    if (event_ != nullptr) {
        EXPECT_TRUE(ok(api_.event_destroy(event_)));
    }
}
Outcome Event::destroy() { return outcome(api_.event_destroy(std::exchange(event_, nullptr))); }

DeviceBuffer::DeviceBuffer(const keel_plugin_api& api, keel_device device, uint64_t size)
    : api_(api), device_(device), size_(size) {
    EXPECT_TRUE(ok(api_.device_alloc(device_, size_, &addr_)));
}
DeviceBuffer::~DeviceBuffer() {
    if (addr_ != 0) {
        EXPECT_TRUE(ok(api_.device_free(device_, addr_)));
    }
}

PinnedBuffer::PinnedBuffer(const keel_plugin_api& api, keel_device device, uint64_t size)
    : api_(api), device_(device) {
    EXPECT_TRUE(ok(api_.host_alloc(device_, size, &ptr_)));
}
PinnedBuffer::~PinnedBuffer() {
    if (ptr_ != nullptr) {
        EXPECT_TRUE(ok(api_.host_free(device_, ptr_)));
    }
}

// ---- the GPU fixture ----------------------------------------------------

std::unique_ptr<LoadedPlugin> CudaDeviceTest::plugin_;
std::string CudaDeviceTest::load_error_;

void CudaDeviceTest::SetUpTestSuite() {
    if (plugin_) return;
    ::setenv("KEEL_CUDA_TEST_KERNELS", "1", 1);
    plugin_ = LoadedPlugin::load(&load_error_);
}

void CudaDeviceTest::TearDownTestSuite() { plugin_.reset(); }

void CudaDeviceTest::SetUp() {
    ASSERT_TRUE(plugin_ != nullptr) << load_error_;
    if (plugin_->device_count() == 0) GTEST_SKIP() << "no CUDA device to test: " << plugin_->status();
    ASSERT_TRUE(ok(api().device_get(0, &device_)));
}

keel_kernel CudaDeviceTest::kernel(const char* name) const {
    keel_kernel k = nullptr;
    EXPECT_TRUE(ok(api().kernel_get(device_, name, &k))) << name;
    return k;
}

Outcome CudaDeviceTest::launch(keel_stream stream, const char* name,
                               const std::vector<keel_kernel_arg>& args) const {
    const LaunchArgs l(args);
    return outcome(api().kernel_launch(stream, kernel(name), l.get()));
}

void CudaDeviceTest::spin(keel_stream stream, int64_t ms) const {
    Outcome o = launch(stream, "test_spin", {i64_arg(ms * 1'000'000)});
    EXPECT_EQ(o.code, KEEL_STATUS_OK) << o.message;
}

}  // namespace keel::cuda_test
