// Test/benchmark helper: loads libkeel_cpu.so with dlopen, initialises it
// with the given KEEL_CPU_* environment, captures what it logs, and talks to
// it only through the C table. Header-only; used by tests/plugin_cpu and
// plugins/cpu/bench.
//
// Not thread-safe to construct/destroy (environment changes); the loaded
// table may be used from any thread.
#pragma once

#include <keel/keel.h>

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace keel::cpu::testing {

// Sets environment variables for its lifetime, restoring the old values.
class ScopedEnv {
public:
    using Vars = std::vector<std::pair<std::string, std::string>>;
    explicit ScopedEnv(const Vars& vars) {
        for (const auto& [k, v] : vars) {
            const char* old = std::getenv(k.c_str());
            saved_.emplace_back(k, old ? std::optional<std::string>(old) : std::nullopt);
            setenv(k.c_str(), v.c_str(), 1);
        }
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;
    ScopedEnv(ScopedEnv&&) = delete;
    ScopedEnv& operator=(ScopedEnv&&) = delete;
    ~ScopedEnv() {
        for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
            if (it->second) setenv(it->first.c_str(), it->second->c_str(), 1);
            else unsetenv(it->first.c_str());
        }
    }

private:
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// A keel_error taken over: code and message, the C object released.
struct CError {
    keel_status code = KEEL_STATUS_OK;
    std::string message;
};
inline std::optional<CError> take(keel_error* e) {
    if (e == nullptr) return std::nullopt;
    CError out{e->code, e->message};
    keel_error_destroy(e);
    return out;
}

class LoadedPlugin {
public:
    struct Log {
        keel_log_level level;
        std::string message;
    };

    explicit LoadedPlugin(const ScopedEnv::Vars& env = {}, uint32_t abi_major = KEEL_ABI_VERSION_MAJOR) {
        handle_ = dlopen(KEEL_CPU_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
        if (!handle_) throw std::runtime_error(std::string("dlopen: ") + dlerror());
        auto init = reinterpret_cast<keel_plugin_entry_fn>(dlsym(handle_, KEEL_PLUGIN_ENTRY_NAME));
        if (!init) throw std::runtime_error("no entry symbol");
        services_.struct_size = KEEL_HOST_SERVICES_STRUCT_SIZE;
        services_.abi_major = abi_major;
        services_.abi_minor = KEEL_ABI_VERSION_MINOR;
        services_.context = this;
        services_.log = [](void* ctx, keel_log_level level, const char* message) {
            auto* self = static_cast<LoadedPlugin*>(ctx);
            std::lock_guard lock(self->log_mutex_);
            self->logs_.push_back({level, message});
        };
        services_.log_enabled = [](void*, keel_log_level) -> int32_t { return 1; };
        ScopedEnv scoped(env);
        init_error_ = take(init(&services_, &api_));
        if (!init_error_) {
            uint32_t n = 0;
            take(api_->device_count(&n));
            take(api_->device_get(0, &device_));
        }
    }
    LoadedPlugin(const LoadedPlugin&) = delete;
    LoadedPlugin& operator=(const LoadedPlugin&) = delete;
    LoadedPlugin(LoadedPlugin&&) = delete;
    LoadedPlugin& operator=(LoadedPlugin&&) = delete;
    ~LoadedPlugin() {
        shutdown();
        if (handle_) dlclose(handle_);
    }

    // Calls plugin_shutdown once (also done by the destructor).
    void shutdown() {
        if (api_ && !shut_down_) {
            shut_down_ = true;
            api_->plugin_shutdown();
        }
    }

    [[nodiscard]] const std::optional<CError>& init_error() const { return init_error_; }
    [[nodiscard]] const keel_plugin_api& api() const { return *api_; }
    [[nodiscard]] keel_device device() const { return device_; }
    [[nodiscard]] std::vector<Log> logs() const {
        std::lock_guard lock(log_mutex_);
        return logs_;
    }

private:
    void* handle_ = nullptr;
    keel_host_services services_{};
    const keel_plugin_api* api_ = nullptr;
    keel_device device_ = nullptr;
    std::optional<CError> init_error_;
    bool shut_down_ = false;
    mutable std::mutex log_mutex_;
    std::vector<Log> logs_;
};

}  // namespace keel::cpu::testing
