#include "cuda_plugin_fixture.hpp"

#include <unistd.h>

#include <cstdlib>

namespace keel::cuda_test {

std::string plugin_library_path() {
    return keel::testing::find_plugin(env::Var::test_cuda_plugin, KEEL_CUDA_PLUGIN_RELATIVE, KEEL_CUDA_PLUGIN_PATH);
}

std::unique_ptr<LoadedPlugin> load_plugin() {
    return std::make_unique<LoadedPlugin>(plugin_library_path());
}

// ---- owners -------------------------------------------------------------

Stream::Stream(const keel_plugin_api& api, keel_device device) : api_(api) {
    KEEL_EXPECT_OK(api_.stream_create(device, 0, &stream_));
}
Stream::~Stream() {
    if (stream_ != nullptr) {
        KEEL_EXPECT_OK(api_.stream_destroy(stream_));
    }
}
Outcome Stream::destroy() { return outcome(api_.stream_destroy(std::exchange(stream_, nullptr))); }

Event::Event(const keel_plugin_api& api, keel_device device, uint32_t flags) : api_(api) {
    KEEL_EXPECT_OK(api_.event_create(device, flags, &event_));
}
Event::~Event() {
    if (event_ != nullptr) {
        KEEL_EXPECT_OK(api_.event_destroy(event_));
    }
}
Outcome Event::destroy() { return outcome(api_.event_destroy(std::exchange(event_, nullptr))); }

DeviceBuffer::DeviceBuffer(const keel_plugin_api& api, keel_device device, uint64_t size)
    : api_(api), device_(device), size_(size) {
    KEEL_EXPECT_OK(api_.device_alloc(device_, size_, &addr_));
}
DeviceBuffer::~DeviceBuffer() {
    if (addr_ != 0) {
        KEEL_EXPECT_OK(api_.device_free(device_, addr_));
    }
}

PinnedBuffer::PinnedBuffer(const keel_plugin_api& api, keel_device device, uint64_t size)
    : api_(api), device_(device) {
    KEEL_EXPECT_OK(api_.host_alloc(device_, size, &ptr_));
}
PinnedBuffer::~PinnedBuffer() {
    if (ptr_ != nullptr) {
        KEEL_EXPECT_OK(api_.host_free(device_, ptr_));
    }
}

// ---- the GPU fixture ----------------------------------------------------

std::unique_ptr<LoadedPlugin> CudaDeviceTest::plugin_;

void CudaDeviceTest::SetUpTestSuite() {
    if (plugin_) return;
    ::setenv("KEEL_CUDA_TEST_KERNELS", "1", 1);
    plugin_ = load_plugin();
}

void CudaDeviceTest::TearDownTestSuite() { plugin_.reset(); }

void CudaDeviceTest::SetUp() {
    ASSERT_FALSE(plugin_->init_error()) << plugin_->init_error()->message;
    if (plugin_->device_count() == 0) GTEST_SKIP() << "no CUDA device to test: " << plugin_->status();
    device_ = plugin_->device();
}

keel_kernel CudaDeviceTest::kernel(const char* name) const {
    keel_kernel k = nullptr;
    KEEL_EXPECT_OK(api().kernel_get(device_, name, &k)) << name;
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
