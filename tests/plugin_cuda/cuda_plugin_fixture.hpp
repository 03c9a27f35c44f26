// Loading libkeel_cuda.so for tests, and small RAII owners of what tests
// create through its C table, so a failed assertion leaks nothing.
#pragma once

#include <keel/keel.h>
#include <keel/testing/launch_args.hpp>
#include <keel/testing/loaded_plugin.hpp>
#include <keel/testing/result.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace keel::cuda_test {

// Where the plugin library is (see CMakeLists.txt for the search order).
[[nodiscard]] std::string plugin_library_path();

// The code and message of an error, taking ownership of it (NULL -> OK, "").
using Outcome = keel::testing::CError;
[[nodiscard]] inline Outcome outcome(keel_error* error) {
    return keel::testing::take(error).value_or(Outcome{});
}

// For KEEL_EXPECT_OK(api.call(...)): fails with the error's status and message.
[[nodiscard]] inline ::testing::AssertionResult ok(keel_error* error) {
    return keel::testing::succeeded(error);
}

using keel::testing::CapturedLog;
using keel::testing::succeeded;  // for a bool where an assertion cannot go (other threads)
using keel::testing::LoadedPlugin;
using Library = keel::testing::PluginLibrary;

// The plugin initialised with the test kernels, its log captured; on
// failure, init_error() says why.
[[nodiscard]] std::unique_ptr<LoadedPlugin> load_plugin();

// ---- owners of plugin objects -------------------------------------------

class Stream {
public:
    Stream(const keel_plugin_api& api, keel_device device);
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    Stream(Stream&&) = delete;
    Stream& operator=(Stream&&) = delete;
    ~Stream();
    [[nodiscard]] keel_stream get() const noexcept { return stream_; }
    // Destroys now and returns what stream_destroy returned.
    [[nodiscard]] Outcome destroy();

private:
    const keel_plugin_api& api_;
    keel_stream stream_ = nullptr;
};

class Event {
public:
    Event(const keel_plugin_api& api, keel_device device, uint32_t flags = KEEL_EVENT_DEFAULT);
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    Event(Event&&) = delete;
    Event& operator=(Event&&) = delete;
    ~Event();
    [[nodiscard]] keel_event get() const noexcept { return event_; }
    [[nodiscard]] Outcome destroy();

private:
    const keel_plugin_api& api_;
    keel_event event_ = nullptr;
};

class DeviceBuffer {
public:
    DeviceBuffer(const keel_plugin_api& api, keel_device device, uint64_t size);
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&&) = delete;
    DeviceBuffer& operator=(DeviceBuffer&&) = delete;
    ~DeviceBuffer();
    [[nodiscard]] keel_device_addr addr() const noexcept { return addr_; }
    [[nodiscard]] uint64_t size() const noexcept { return size_; }

private:
    const keel_plugin_api& api_;
    keel_device device_;
    keel_device_addr addr_ = 0;
    uint64_t size_;
};

class PinnedBuffer {
public:
    PinnedBuffer(const keel_plugin_api& api, keel_device device, uint64_t size);
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
    PinnedBuffer(PinnedBuffer&&) = delete;
    PinnedBuffer& operator=(PinnedBuffer&&) = delete;
    ~PinnedBuffer();
    [[nodiscard]] void* get() const noexcept { return ptr_; }
    template <class T>
    [[nodiscard]] T* as() const noexcept { return static_cast<T*>(ptr_); }

private:
    const keel_plugin_api& api_;
    keel_device device_;
    void* ptr_ = nullptr;
};

// ---- kernel arguments ---------------------------------------------------

using keel::testing::buffer_arg;
using keel::testing::f32_arg;
using keel::testing::i64_arg;
using keel::testing::LaunchArgs;

// ---- a fixture with one device, for the GPU tests ------------------------

// Loads the plugin once per test binary with the test kernels enabled, and
// skips every test with plugin_info's reason when there is no device.
class CudaDeviceTest : public ::testing::Test {
protected:
    static void SetUpTestSuite();
    static void TearDownTestSuite();
    void SetUp() override;

    [[nodiscard]] const keel_plugin_api& api() const { return plugin_->api(); }
    [[nodiscard]] keel_device device() const { return device_; }
    [[nodiscard]] keel_kernel kernel(const char* name) const;

    // Launches `name` on `stream` and returns the outcome.
    Outcome launch(keel_stream stream, const char* name, const std::vector<keel_kernel_arg>& args) const;
    // Keeps `stream` busy for `ms` milliseconds (test-only kernel).
    void spin(keel_stream stream, int64_t ms) const;

    static std::unique_ptr<LoadedPlugin> plugin_;
    keel_device device_ = nullptr;
};

// A buffer's floats, read back after everything before on `stream`.
inline std::vector<float> read_floats(const keel_plugin_api& api, keel_stream stream, const DeviceBuffer& buf) {
    std::vector<float> host(buf.size() / sizeof(float), -1.0f);
    KEEL_EXPECT_OK(api.memcpy_d2h(stream, host.data(), buf.addr(), buf.size()));
    KEEL_EXPECT_OK(api.stream_synchronize(stream));
    return host;
}

}  // namespace keel::cuda_test
