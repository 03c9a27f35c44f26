// Runtime: discovers and loads the device plugins, and hands out their devices.
#pragma once

#include <keel/device.hpp>
#include <keel/export.hpp>
#include <keel/result.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace keel {

// Version of the keel runtime ("0.1.0").
[[nodiscard]] KEEL_API const char* runtime_version() noexcept;

// Where Runtime::create looks for plugins.
struct RuntimeOptions {
    // Searched first, in order. A directory is scanned for libkeel_<type>.so
    // files (in name order); a file is loaded directly.
    std::vector<std::filesystem::path> plugin_path;
    // Then the colon-separated entries of the KEEL_PLUGIN_PATH environment
    // variable, same rules.
    bool use_env_plugin_path = true;
    // Then keel/plugins beside libkeel_runtime.so (<libdir>/keel/plugins),
    // found from where the library is at run time: an installed runtime
    // finds the install's plugins even after the prefix is moved, and the
    // runtime of a build tree finds that tree's (which mirrors the layout).
    bool use_default_plugin_dirs = true;
    // Options for the plugins, by device type and key, values spelt as the
    // setting's environment variable accepts them:
    //   options.plugin_options["cpu"]["memory_bytes"] = "1G";
    // Each plugin gets its type's options at keel_plugin_init (keel.h
    // "Plugin options"); an option overrides the environment variable of
    // the same setting (KEEL_CPU_MEMORY_BYTES), which overrides the default.
    // PluginInfo::settings shows what each plugin took, and keel-info
    // --option does the same from the command line. A plugin that does not
    // take a key, or not that value, is rejected with INVALID_ARGUMENT
    // naming it; a plugin of a minor before 1.6 cannot take options and is
    // rejected when given any (FAILED_PRECONDITION). A plugin file is loaded
    // once per process: while one Runtime holds it with some options,
    // another that asks for other options gets it rejected
    // (FAILED_PRECONDITION). Options for a type no plugin file provides are
    // logged (WARN) and otherwise ignored, so a program may configure
    // plugins that a machine lacks.
    std::map<std::string, std::map<std::string, std::string>> plugin_options;
};

// One entry of the search path and where it came from.
struct SearchPathEntry {
    std::filesystem::path path;
    std::string origin;  // "options", "KEEL_PLUGIN_PATH", "beside the runtime"
};

// Where the value in effect of a plugin's setting came from.
enum class SettingSource { plugin_default, environment, option };
[[nodiscard]] KEEL_API const char* setting_source_name(SettingSource source) noexcept;

// One setting a plugin takes as an option (keel.h's keel_option_info).
struct PluginSetting {
    std::string key;    // "memory_bytes"
    std::string value;  // in effect ("4G")
    SettingSource source = SettingSource::plugin_default;
    std::string environment_variable;  // "KEEL_CPU_MEMORY_BYTES", or "" when none
    std::string accepts;               // what a valid value looks like
    std::string meaning;
};

// A plugin that loaded.
struct PluginInfo {
    std::filesystem::path path;
    std::string type;     // "cpu"
    std::string version;  // the plugin's own version
    std::uint32_t abi_major = 0;
    std::uint32_t abi_minor = 0;
    std::size_t table_size = 0;  // struct_size of its keel_plugin_api
    std::string status;          // e.g. why it has no devices; may be ""
    std::uint32_t device_count = 0;
    // The settings it takes as options (ABI 1.6; empty for a plugin that
    // takes none or declares an older minor).
    std::vector<PluginSetting> settings;
};

// A plugin file that was found but not loaded, and why.
struct RejectedPlugin {
    std::filesystem::path path;
    std::string reason;  // names the problem ("required entry 'device_free' is null")
    Status status = KEEL_STATUS_INTERNAL;
};

// The set of plugins and devices found at create().
//
// Not a singleton: every create() searches again, and tests may create as
// many as they like. Plugin libraries are process-wide, though: when two
// Runtimes find the same plugin file while the first still holds it, they
// share one load (keel_plugin_init runs once per load).
//
// Lifetimes: the Runtime holds its plugins loaded, and so does every
// Device, Stream, Event, buffer and Kernel made from them. A plugin is shut
// down (plugin_shutdown) and its library unloaded when the last of these
// goes, which may be after the Runtime is destroyed.
//
// Move-only. A moved-from Runtime has no plugins and no devices.
//
// Threads: immutable after create(); every const member may be called from
// several threads at once; may be sent to another thread.
class KEEL_API Runtime {
public:
    // Loads every plugin found (see RuntimeOptions). A plugin that fails to
    // load is skipped with one WARN log line and kept in rejected_plugins();
    // finding none is not an error.
    [[nodiscard]] static Result<Runtime> create(const RuntimeOptions& options = {});

    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;
    Runtime(Runtime&&) noexcept;
    Runtime& operator=(Runtime&&) noexcept;
    ~Runtime();

    [[nodiscard]] const std::vector<PluginInfo>& plugins() const noexcept;
    [[nodiscard]] const std::vector<RejectedPlugin>& rejected_plugins() const noexcept;
    [[nodiscard]] const std::vector<SearchPathEntry>& search_path() const noexcept;
    // Every device of every loaded plugin, in load order.
    [[nodiscard]] const std::vector<Device>& devices() const noexcept;

    // The device named "<type>:<index>". NOT_FOUND otherwise, with a
    // message that lists the names that exist.
    [[nodiscard]] Result<Device> device(std::string_view name) const;

    // The default plugin directory: keel/plugins beside libkeel_runtime.so.
    [[nodiscard]] static std::vector<SearchPathEntry> default_plugin_dirs();

private:
    struct State;
    KEEL_LOCAL explicit Runtime(std::unique_ptr<State> state) noexcept;
    std::unique_ptr<State> state_;
};

}  // namespace keel
