// Loading libkeel_cuda.so for tests, and small RAII owners of what tests
// create through its C table, so a failed assertion leaks nothing.
#pragma once

#include <keel/keel.h>
#include <keel_test/launch_args.hpp>

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
struct Outcome {
    keel_status code = KEEL_STATUS_OK;
    std::string message;
};
[[nodiscard]] Outcome outcome(keel_error* error);

// For EXPECT_TRUE(ok(api.call(...))): fails with the error's message.
[[nodiscard]] ::testing::AssertionResult ok(keel_error* error);

// Log lines the plugin sent through the host services. Thread-safe.
class CapturedLog {
public:
    void add(keel_log_level level, std::string line);
    [[nodiscard]] std::vector<std::string> lines() const;

private:
    mutable std::mutex mutex_;
    std::vector<std::string> lines_;
};

// Host services whose log goes to a CapturedLog; `abi_major` can be
// changed to test version negotiation.
[[nodiscard]] keel_host_services make_host_services(CapturedLog* log);

// The dlopen'ed library. Move-only; dlclose on destruction (the plugin is
// linked with -z nodelete, so its code stays mapped: that is intended).
class Library {
public:
    Library() = default;
    explicit Library(void* handle) : handle_(handle) {}
    Library(const Library&) = delete;
    Library& operator=(const Library&) = delete;
    Library(Library&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    Library& operator=(Library&& other) noexcept;
    ~Library();

    // dlopen error text on failure (handle then null).
    static Library open(std::string* error);
    [[nodiscard]] void* handle() const noexcept { return handle_; }
    [[nodiscard]] keel_plugin_entry_fn entry() const;

private:
    void* handle_ = nullptr;
};

// An initialised plugin: its table until destruction, which calls
// plugin_shutdown. Move-only.
class LoadedPlugin {
public:
    LoadedPlugin(const LoadedPlugin&) = delete;
    LoadedPlugin& operator=(const LoadedPlugin&) = delete;
    LoadedPlugin(LoadedPlugin&&) noexcept = default;
    LoadedPlugin& operator=(LoadedPlugin&&) noexcept = default;
    ~LoadedPlugin();

    // Loads and initialises; on failure `error` says why and null is returned.
    static std::unique_ptr<LoadedPlugin> load(std::string* error);

    [[nodiscard]] const keel_plugin_api& api() const noexcept { return *api_; }
    [[nodiscard]] void* library() const noexcept { return library_.handle(); }
    [[nodiscard]] const CapturedLog& log() const noexcept { return *log_; }
    [[nodiscard]] uint32_t device_count() const;
    // plugin_info's status ("" when there is nothing to say).
    [[nodiscard]] std::string status() const;

private:
    struct Key {
        explicit Key() = default;
    };

public:
    explicit LoadedPlugin(Key) {}  // through load() only

private:
    Library library_;
    std::unique_ptr<CapturedLog> log_;
    std::unique_ptr<keel_host_services> host_;
    const keel_plugin_api* api_ = nullptr;
};

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

using keel::test::buffer_arg;
using keel::test::f32_arg;
using keel::test::i64_arg;
using keel::test::LaunchArgs;

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
    static std::string load_error_;
    keel_device device_ = nullptr;
};

}  // namespace keel::cuda_test
