#include <keel/testing/loaded_plugin.hpp>

#include <keel/base/elf_check.hpp>

#include <dlfcn.h>

#include <cstdio>
#include <filesystem>
#include <utility>

namespace keel::testing {

std::string find_plugin(env::Var var, const std::string& relative, const std::string& built) {
    if (const auto path = env::text(var)) return std::string(*path);
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const std::filesystem::path beside = exe.parent_path() / relative;
        if (std::filesystem::exists(beside, ec)) return beside.lexically_normal().string();
    }
    return built;
}

std::optional<CError> take(keel_error* e) {
    if (e == nullptr) return std::nullopt;
    CError out{e->code, e->message != nullptr ? e->message : "(no message)"};
    keel_error_destroy(e);
    return out;
}

// ---- PluginLibrary -----------------------------------------------------------

Result<PluginLibrary> PluginLibrary::open(const std::string& path) {
    // As the runtime does: a cut or corrupt file would crash the system loader.
    KEEL_TRY(base::check_shared_library_file(path));
    ::dlerror();
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* why = ::dlerror();
        return Error(KEEL_STATUS_UNAVAILABLE, "dlopen " + path + ": " + (why != nullptr ? why : "failed"));
    }
    return PluginLibrary(handle);
}

PluginLibrary::PluginLibrary(PluginLibrary&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

PluginLibrary& PluginLibrary::operator=(PluginLibrary&& other) noexcept {
    if (this != &other) {
        if (handle_ != nullptr) ::dlclose(handle_);
        handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
}

PluginLibrary::~PluginLibrary() {
    if (handle_ != nullptr) ::dlclose(handle_);
}

keel_plugin_entry_fn PluginLibrary::entry() const noexcept {
    return reinterpret_cast<keel_plugin_entry_fn>(::dlsym(handle_, KEEL_PLUGIN_ENTRY_NAME));
}

// ---- CapturedLog -----------------------------------------------------------------

keel_host_services CapturedLog::services(std::uint32_t abi_major, std::uint32_t abi_minor) {
    keel_host_services s{};
    s.struct_size = KEEL_HOST_SERVICES_STRUCT_SIZE;
    s.abi_major = abi_major;
    s.abi_minor = abi_minor;
    s.context = this;
    s.log = [](void* context, keel_log_level level, const char* message) {
        auto* self = static_cast<CapturedLog*>(context);
        const std::string text = message != nullptr ? message : "(null message)";
        if (self->echo_) std::fprintf(stderr, "plugin: %s\n", text.c_str());
        std::lock_guard lock(self->mu_);
        self->lines_.push_back({level, text});
    };
    s.log_enabled = [](void* context, keel_log_level level) -> std::int32_t {
        return level >= static_cast<CapturedLog*>(context)->min_level_ ? 1 : 0;
    };
    return s;
}

std::vector<CapturedLog::Line> CapturedLog::lines() const {
    std::lock_guard lock(mu_);
    return lines_;
}

// ---- LoadedPlugin ----------------------------------------------------------------

LoadedPlugin::LoadedPlugin(const std::string& path, const Options& options)
    : log_(std::make_unique<CapturedLog>(options.min_log_level, options.echo_log)) {
    auto library = PluginLibrary::open(path);
    if (!library.ok()) {
        init_error_ = CError{library.error().code(), library.error().message()};
        return;
    }
    library_.emplace(std::move(library).value());
    keel_plugin_entry_fn init = library_->entry();
    if (init == nullptr) {
        init_error_ = CError{KEEL_STATUS_NOT_FOUND, path + " has no " KEEL_PLUGIN_ENTRY_NAME};
        return;
    }
    services_ = log_->services(options.abi_major);
    ScopedEnv env(options.env);
    init_error_ = take(init(&services_, &api_));
    if (init_error_) {
        api_ = nullptr;
        return;
    }
    if (auto e = take(api_->device_count(&device_count_))) {
        init_error_ = e;
        return;
    }
    if (device_count_ > 0) {
        if (auto e = take(api_->device_get(0, &device_))) init_error_ = e;
    }
}

LoadedPlugin::~LoadedPlugin() {
    shutdown();
    library_.reset();  // dlclose after plugin_shutdown
}

void LoadedPlugin::shutdown() {
    if (api_ != nullptr && !shut_down_) {
        shut_down_ = true;
        api_->plugin_shutdown();
    }
}

std::string LoadedPlugin::status() const {
    keel_plugin_info info{};
    info.struct_size = KEEL_PLUGIN_INFO_STRUCT_SIZE;
    if (take(api_->plugin_info(&info))) return "(plugin_info failed)";
    return info.status != nullptr ? info.status : "";
}

}  // namespace keel::testing
