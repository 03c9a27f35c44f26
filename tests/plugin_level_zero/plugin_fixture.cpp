#include "plugin_fixture.hpp"

#include <dlfcn.h>

namespace keel::level_zero_test {

Outcome take(keel_error* error) {
    if (error == nullptr) return {};
    Outcome o{error->code, error->message};
    keel_error_destroy(error);
    return o;
}

::testing::AssertionResult succeeded(keel_error* error) {
    const Outcome o = take(error);
    if (o.ok()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << o.message;
}

keel_plugin_entry_fn entry_symbol() {
    void* library = dlopen(KEEL_LEVEL_ZERO_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) return nullptr;
    return reinterpret_cast<keel_plugin_entry_fn>(dlsym(library, KEEL_PLUGIN_ENTRY_NAME));
}

Plugin::Plugin() {
    library_ = dlopen(KEEL_LEVEL_ZERO_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (library_ == nullptr) {
        ADD_FAILURE() << "dlopen " << KEEL_LEVEL_ZERO_PLUGIN_PATH << ": " << dlerror();
        return;
    }
    const auto init = reinterpret_cast<keel_plugin_entry_fn>(dlsym(library_, KEEL_PLUGIN_ENTRY_NAME));
    if (init == nullptr) {
        ADD_FAILURE() << "no " << KEEL_PLUGIN_ENTRY_NAME;
        return;
    }
    host_.struct_size = KEEL_HOST_SERVICES_STRUCT_SIZE;
    host_.abi_major = KEEL_ABI_VERSION_MAJOR;
    host_.abi_minor = KEEL_ABI_VERSION_MINOR;
    host_.context = this;
    host_.log = [](void* self, keel_log_level, const char* message) {
        auto* p = static_cast<Plugin*>(self);
        std::lock_guard lock(p->log_mutex_);
        p->log_.emplace_back(message);
    };
    host_.log_enabled = [](void*, keel_log_level) -> int32_t { return 1; };
    const Outcome o = take(init(&host_, &api_));
    if (!o.ok()) {
        api_ = nullptr;
        ADD_FAILURE() << "keel_plugin_init: " << o.message;
    }
}

Plugin::~Plugin() {
    shutdown();
    if (library_ != nullptr) dlclose(library_);
}

void Plugin::shutdown() {
    if (api_ != nullptr && !shut_down_) api_->plugin_shutdown();
    shut_down_ = true;
}

std::uint32_t Plugin::device_count() const {
    std::uint32_t n = 0;
    EXPECT_TRUE(succeeded(api_->device_count(&n)));
    return n;
}

keel_device Plugin::device(std::uint32_t index) const {
    keel_device d = nullptr;
    EXPECT_TRUE(succeeded(api_->device_get(index, &d)));
    return d;
}

std::string Plugin::status() const {
    keel_plugin_info info{};
    info.struct_size = KEEL_PLUGIN_INFO_STRUCT_SIZE;
    EXPECT_TRUE(succeeded(api_->plugin_info(&info)));
    return info.status ? info.status : "";
}

std::vector<std::string> Plugin::log() const {
    std::lock_guard lock(log_mutex_);
    return log_;
}

keel_error* HostGate::hold(const keel_plugin_api& api, keel_stream stream) {
    return api.stream_enqueue_host_func(stream, &HostGate::wait, this);
}

void HostGate::open() {
    {
        std::lock_guard lock(mutex_);
        opened_ = true;
    }
    opened_cv_.notify_all();
}

void HostGate::wait(void* self, keel_status) {
    auto* gate = static_cast<HostGate*>(self);
    std::unique_lock lock(gate->mutex_);
    gate->opened_cv_.wait(lock, [gate] { return gate->opened_; });
}

void StatusLog::record(void* self, keel_status status) {
    auto* log = static_cast<StatusLog*>(self);
    std::lock_guard lock(log->mutex);
    log->seen.push_back(status);
}

std::vector<keel_status> StatusLog::get() {
    std::lock_guard lock(mutex);
    return seen;
}

}  // namespace keel::level_zero_test
