// A plugin loaded the way the runtime loads it (dlopen, then its entry
// symbol with host services), and driven through its C table alone: for
// the tests of one plugin (tests/plugin_cpu, tests/plugin_cuda), the kernel
// tests that reach every plugin (tests/kernels_lerp), and the benchmarks
// that time a plugin without the runtime. Logs the plugin sends through the
// host services are captured.
//
// Not thread-safe to construct or destroy (the plugin reads its settings
// from the environment at init); the loaded table may be used from any
// thread, as the ABI says.
#pragma once

#include <keel/environment.hpp>
#include <keel/keel.h>
#include <keel/result.hpp>
#include <keel/testing/scoped_env.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace keel::testing {

// Where a plugin library is: the path in `var` (KEEL_CUDA_PLUGIN, ...) if
// it is set and not empty, else `relative` to this executable's directory if
// a file is there (a build tree copied elsewhere), else `built` (its path at
// build time).
[[nodiscard]] std::string find_plugin(env::Var var, const std::string& relative,
                                      const std::string& built);

// A keel_error taken over: its code and message, the C object destroyed.
struct CError {
    keel_status code = KEEL_STATUS_OK;
    std::string message;
};
// The error `e` reports (nullopt for null, the ABI's success), destroying it
// (call it to release an error you do not need).
std::optional<CError> take(keel_error* e);

// The dlopen'ed library. Move-only; dlclose on destruction.
class PluginLibrary {
public:
    // dlopen (RTLD_NOW | RTLD_LOCAL, as the runtime does); UNAVAILABLE with
    // dlerror's text when it fails.
    [[nodiscard]] static Result<PluginLibrary> open(const std::string& path);

    PluginLibrary(const PluginLibrary&) = delete;
    PluginLibrary& operator=(const PluginLibrary&) = delete;
    PluginLibrary(PluginLibrary&& other) noexcept;
    PluginLibrary& operator=(PluginLibrary&& other) noexcept;
    ~PluginLibrary();

    [[nodiscard]] void* handle() const noexcept { return handle_; }
    // The entry symbol, or null when the library has none.
    [[nodiscard]] keel_plugin_entry_fn entry() const noexcept;

private:
    explicit PluginLibrary(void* handle) noexcept : handle_(handle) {}
    void* handle_ = nullptr;
};

// Host services whose log goes to this object. Thread-safe.
class CapturedLog {
public:
    struct Line {
        keel_log_level level = KEEL_LOG_INFO;
        std::string message;
    };
    // Levels below `min_level` are not enabled (the plugin does not even
    // format them); `echo` also prints captured lines to stderr.
    explicit CapturedLog(keel_log_level min_level = KEEL_LOG_TRACE, bool echo = false)
        : min_level_(min_level), echo_(echo) {}
    CapturedLog(const CapturedLog&) = delete;
    CapturedLog& operator=(const CapturedLog&) = delete;
    CapturedLog(CapturedLog&&) = delete;
    CapturedLog& operator=(CapturedLog&&) = delete;
    ~CapturedLog() = default;

    // Services that log here, announcing ABI `abi_major`.`abi_minor` (change
    // them to test version negotiation). Valid while this object lives.
    [[nodiscard]] keel_host_services services(std::uint32_t abi_major = KEEL_ABI_VERSION_MAJOR,
                                              std::uint32_t abi_minor = KEEL_ABI_VERSION_MINOR);
    [[nodiscard]] std::vector<Line> lines() const;

private:
    keel_log_level min_level_;
    bool echo_;
    mutable std::mutex mu_;
    std::vector<Line> lines_;
};

// How LoadedPlugin initialises a plugin.
struct LoadOptions {
    ScopedEnv::Vars env;  // set while the plugin initialises
    std::uint32_t abi_major = KEEL_ABI_VERSION_MAJOR;
    keel_log_level min_log_level = KEEL_LOG_TRACE;  // see CapturedLog
    bool echo_log = false;
};

// An initialised plugin: its table until shutdown() or destruction
// (plugin_shutdown, then dlclose). When loading or init fails, init_error()
// says why and nothing else may be used.
class LoadedPlugin {
public:
    using Options = LoadOptions;
    explicit LoadedPlugin(const std::string& path, const Options& options = {});
    LoadedPlugin(const LoadedPlugin&) = delete;
    LoadedPlugin& operator=(const LoadedPlugin&) = delete;
    LoadedPlugin(LoadedPlugin&&) = delete;
    LoadedPlugin& operator=(LoadedPlugin&&) = delete;
    ~LoadedPlugin();

    // Calls plugin_shutdown once (the destructor does too).
    void shutdown();

    [[nodiscard]] const std::optional<CError>& init_error() const noexcept { return init_error_; }
    [[nodiscard]] const keel_plugin_api& api() const noexcept { return *api_; }
    [[nodiscard]] void* library() const noexcept { return library_ ? library_->handle() : nullptr; }
    // Device 0 (null when the plugin has none).
    [[nodiscard]] keel_device device() const noexcept { return device_; }
    [[nodiscard]] std::uint32_t device_count() const noexcept { return device_count_; }
    // plugin_info's status ("" when there is nothing to say).
    [[nodiscard]] std::string status() const;
    [[nodiscard]] std::vector<CapturedLog::Line> logs() const { return log_->lines(); }

private:
    std::unique_ptr<CapturedLog> log_;
    keel_host_services services_{};
    std::optional<PluginLibrary> library_;
    const keel_plugin_api* api_ = nullptr;
    keel_device device_ = nullptr;
    std::uint32_t device_count_ = 0;
    std::optional<CError> init_error_;
    bool shut_down_ = false;
};

}  // namespace keel::testing
