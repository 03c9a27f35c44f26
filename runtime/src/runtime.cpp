#include <keel/runtime.hpp>

#include "access.hpp"
#include "discovery.hpp"
#include "loader.hpp"
#include "logger.hpp"
#include "trace/environment.hpp"

#include <keel/environment.hpp>

#include <map>
#include <set>
#include <system_error>

namespace keel {

const char* runtime_version() noexcept { return KEEL_RUNTIME_VERSION; }

struct Runtime::State {
    std::vector<SearchPathEntry> search_path;
    std::vector<std::shared_ptr<detail::Plugin>> loaded;
    std::vector<PluginInfo> plugins;
    std::vector<RejectedPlugin> rejected;
    std::vector<Device> devices;

    void reject(std::filesystem::path path, Error error) {
        detail::logger()->warn("[loader] rejected plugin {}: {}", path.string(), error.message());
        rejected.push_back({std::move(path), error.message(), error.code()});
    }

    void add(std::shared_ptr<detail::Plugin> plugin) {
        const detail::PluginApi& api = plugin->api();
        plugins.push_back({plugin->path(), plugin->type(), plugin->version(), api.abi_major(),
                           api.abi_minor(), api.table_size(), plugin->status(),
                           static_cast<std::uint32_t>(plugin->devices().size()), plugin->settings()});
        for (const auto& slot : plugin->devices())
            // The Device points at its slot and shares the plugin's handle group.
            devices.push_back(detail::Access::device(plugin->shares().handle(*slot)));
        detail::logger()->info("[loader] loaded plugin {} {} (ABI {}.{}) from {}: {} device(s){}{}",
                               plugin->type(), plugin->version(), api.abi_major(), api.abi_minor(),
                               plugin->path().string(), plugin->devices().size(),
                               plugin->status().empty() ? "" : "; ", plugin->status());
        loaded.push_back(std::move(plugin));
    }

    const PluginInfo* provider_of(const std::string& type) const {
        for (const PluginInfo& p : plugins)
            if (p.type == type) return &p;
        return nullptr;
    }
};

Runtime::Runtime(std::unique_ptr<State> state) noexcept : state_(std::move(state)) {}
Runtime::Runtime(Runtime&&) noexcept = default;
Runtime& Runtime::operator=(Runtime&&) noexcept = default;
Runtime::~Runtime() = default;

std::vector<SearchPathEntry> Runtime::default_plugin_dirs() {
    return {{detail::runtime_library_dir() / KEEL_PLUGIN_DIR_BESIDE_RUNTIME, "beside the runtime"}};
}

const char* setting_source_name(SettingSource source) noexcept {
    switch (source) {
        case SettingSource::environment: return "environment";
        case SettingSource::option: return "option";
        case SettingSource::plugin_default: break;
    }
    return "default";
}

namespace {
// Keys as keel.h's keel_option spells them: [a-z0-9_]+.
bool is_option_key(std::string_view key) noexcept {
    return detail::is_valid_device_type(key);
}

Result<void> check_plugin_options(const RuntimeOptions& options) {
    for (const auto& [type, settings] : options.plugin_options) {
        if (!detail::is_valid_device_type(type))
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Runtime::create] plugin_options names device type '" + type +
                                                          "', which is not of the form [a-z0-9_]+");
        for (const auto& [key, value] : settings) {
            if (!is_option_key(key))
                return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Runtime::create] plugin_options[\"" + type +
                                                              "\"] has key '" + key +
                                                              "', which is not of the form [a-z0-9_]+");
            if (value.find('\0') != std::string::npos)
                return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Runtime::create] plugin_options[\"" + type +
                                                              "\"][\"" + key + "\"] holds a NUL character");
        }
    }
    return ok();
}
}  // namespace

Result<Runtime> Runtime::create(const RuntimeOptions& options) {
    namespace fs = std::filesystem;
    (void)detail::logger();  // first, so that it outlives every plugin (static destruction order)
    // The logger cannot fail the program that logs; the runtime can say the value is wrong.
    if (const auto level = env::text(env::Var::log_level); level && !detail::parse_log_level(*level))
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Runtime::create] " + env::invalid(env::Var::log_level, *level).message());
    KEEL_TRY(check_plugin_options(options));
    KEEL_TRY(trace::apply_environment());
    auto state = std::make_unique<State>();
    state->search_path = detail::build_search_path(options);
    std::set<std::string> types_found;
    static const std::map<std::string, std::string> kNoOptions;

    std::set<fs::path> seen;
    for (const fs::path& candidate : detail::list_candidates(state->search_path)) {
        std::error_code ec;
        fs::path canonical = fs::weakly_canonical(candidate, ec);
        if (ec) canonical = candidate;
        if (!seen.insert(canonical).second) {
            detail::logger()->debug("[loader] {} is listed more than once; loaded once",
                                    canonical.string());
            continue;
        }
        auto type = detail::type_from_file_name(canonical);
        if (!type) {
            state->reject(canonical,
                          Error(KEEL_STATUS_INVALID_ARGUMENT,
                                "file name " + canonical.filename().string() +
                                    " does not follow libkeel_<type>.so with <type> of [a-z0-9_]+"));
            continue;
        }
        types_found.insert(*type);
        if (const PluginInfo* first = state->provider_of(*type)) {
            state->reject(canonical, Error(KEEL_STATUS_FAILED_PRECONDITION,
                                           "duplicate device type '" + *type +
                                               "': already provided by " + first->path.string() +
                                               " (the first one found wins)"));
            continue;
        }
        const auto given = options.plugin_options.find(*type);
        auto plugin = detail::acquire_plugin(canonical, *type,
                                             given != options.plugin_options.end() ? given->second : kNoOptions);
        if (!plugin) {
            state->reject(canonical, std::move(plugin).error());
            continue;
        }
        state->add(std::move(plugin).value());
    }
    for (const auto& [type, settings] : options.plugin_options)
        if (!types_found.contains(type))
            detail::logger()->warn("[Runtime::create] options given for plugin type '{}', but no plugin file "
                                   "libkeel_{}.so was found; they are not used",
                                   type, type);
    return Runtime(std::move(state));
}

namespace {
const std::vector<PluginInfo> kNoPlugins;
const std::vector<RejectedPlugin> kNoRejected;
const std::vector<SearchPathEntry> kNoSearchPath;
const std::vector<Device> kNoDevices;
}  // namespace

const std::vector<PluginInfo>& Runtime::plugins() const noexcept {
    return state_ ? state_->plugins : kNoPlugins;
}
const std::vector<RejectedPlugin>& Runtime::rejected_plugins() const noexcept {
    return state_ ? state_->rejected : kNoRejected;
}
const std::vector<SearchPathEntry>& Runtime::search_path() const noexcept {
    return state_ ? state_->search_path : kNoSearchPath;
}
const std::vector<Device>& Runtime::devices() const noexcept {
    return state_ ? state_->devices : kNoDevices;
}

Result<Device> Runtime::device(std::string_view name) const {
    for (const Device& d : devices())
        if (d.name() == name) return d;
    std::string message = "[Runtime::device] no device named '" + std::string(name) + "'; ";
    if (devices().empty()) {
        message += "no devices are loaded";
    } else {
        message += "devices: ";
        for (std::size_t i = 0; i < devices().size(); ++i)
            message += (i ? ", " : "") + devices()[i].name();
    }
    // Someone asking for cuda:0 on a machine without a GPU needs to know the
    // plugin loaded and why it has no device.
    std::string idle;
    for (const PluginInfo& p : plugins())
        if (p.device_count == 0)
            idle += (idle.empty() ? "" : "; ") + p.type + ": " + (p.status.empty() ? "no devices" : p.status);
    if (!idle.empty()) message += "; plugins loaded with no device: " + idle;
    // A plugin refused for a setting or a bad file is often the one wanted.
    if (!rejected_plugins().empty()) {
        message += "; rejected plugin files: ";
        for (std::size_t i = 0; i < rejected_plugins().size(); ++i)
            message += (i ? "; " : "") + rejected_plugins()[i].path.filename().string() + " (" +
                       rejected_plugins()[i].reason + ")";
        message += " (keel-info shows more)";
    }
    return Error(KEEL_STATUS_NOT_FOUND, std::move(message));
}

}  // namespace keel
