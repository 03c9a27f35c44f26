// libkeel_level_zero.so loaded with dlopen and driven through its C table,
// as the runtime drives it, for the plugin's own tests.
#pragma once

#include <keel/keel.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

namespace keel::level_zero_test {

// An error taken over from the plugin: code and message (OK, "" for none).
struct Outcome {
    keel_status code = KEEL_STATUS_OK;
    std::string message;
    [[nodiscard]] bool ok() const noexcept { return code == KEEL_STATUS_OK; }
};
[[nodiscard]] Outcome take(keel_error* error);

// For EXPECT_TRUE(succeeded(api.call(...))): fails with the error's message.
[[nodiscard]] ::testing::AssertionResult succeeded(keel_error* error);

// The plugin, initialised; plugin_shutdown and dlclose on destruction.
// Not thread-safe to create or destroy; the table may be used from any thread.
class Plugin {
public:
    // Loads and initialises it; a failure is a test failure (api() is then null).
    Plugin();
    Plugin(const Plugin&) = delete;
    Plugin& operator=(const Plugin&) = delete;
    Plugin(Plugin&&) = delete;
    Plugin& operator=(Plugin&&) = delete;
    ~Plugin();

    [[nodiscard]] const keel_plugin_api* api() const noexcept { return api_; }
    [[nodiscard]] std::uint32_t device_count() const;
    [[nodiscard]] keel_device device(std::uint32_t index) const;
    // plugin_info's status.
    [[nodiscard]] std::string status() const;
    // Lines the plugin logged, any level.
    [[nodiscard]] std::vector<std::string> log() const;
    // Calls plugin_shutdown now (the destructor then only unloads).
    void shutdown();

private:
    void* library_ = nullptr;
    const keel_plugin_api* api_ = nullptr;
    keel_host_services host_{};
    mutable std::mutex log_mutex_;
    std::vector<std::string> log_;
    bool shut_down_ = false;
};

// The entry symbol of a freshly dlopen'ed plugin, for tests of the
// negotiation itself; the library stays loaded for the process.
[[nodiscard]] keel_plugin_entry_fn entry_symbol();

// A host function that blocks its stream until open() (or destruction), so
// a test controls when work behind it may run.
class HostGate {
public:
    HostGate() = default;
    HostGate(const HostGate&) = delete;
    HostGate& operator=(const HostGate&) = delete;
    HostGate(HostGate&&) = delete;
    HostGate& operator=(HostGate&&) = delete;
    ~HostGate() { open(); }
    // Enqueues the blocking function on `stream`.
    [[nodiscard]] keel_error* hold(const keel_plugin_api& api, keel_stream stream);
    void open();

private:
    static void wait(void* self, keel_status status);
    std::mutex mutex_;
    std::condition_variable opened_cv_;
    bool opened_ = false;
};

// Records the status each host function got, in order.
struct StatusLog {
    std::mutex mutex;
    std::vector<keel_status> seen;
    static void record(void* self, keel_status status);
    [[nodiscard]] std::vector<keel_status> get();
};

}  // namespace keel::level_zero_test
