#include "loader.hpp"

#include <keel/c_error.hpp>
#include "logger.hpp"

#include <keel/base/elf_check.hpp>
#include <keel/base/no_destructor.hpp>

#include <boost/dll/shared_library.hpp>

#include <dlfcn.h>

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>

namespace keel::detail {

namespace {

using EntryFn = keel_error*(const keel_host_services*, const keel_plugin_api**);

// After keel_plugin_init succeeded but the table was refused: shut the
// plugin down if its table can be trusted that far, otherwise keep the
// library mapped for good (unloading code that may run threads crashes).
void abandon_initialised(const keel_plugin_api* table, const std::filesystem::path& path,
                         std::unique_ptr<HostServices>& services) {
    constexpr std::size_t header = KEEL_STRUCT_SIZE(keel_plugin_api, abi_minor);
    if (table != nullptr && table->struct_size >= header &&
        table->abi_major == KEEL_ABI_VERSION_MAJOR &&
        table->struct_size >= KEEL_API_ENTRY_END(plugin_shutdown) &&
        table->plugin_shutdown != nullptr) {
        table->plugin_shutdown();
        return;
    }
    logger()->debug("[loader] {} cannot be shut down safely; it stays mapped", path.string());
    pin_library(path);
    keep_forever(std::move(services));
}

using OptionMap = std::map<std::string, std::string>;

std::string describe_options(const OptionMap& options) {
    if (options.empty()) return "no options";
    std::string out;
    for (const auto& [key, value] : options) out += (out.empty() ? "" : ", ") + key + "=" + value;
    return "options " + out;
}

// The first minor whose plugins read options (keel.h [options.read-at-init]).
constexpr std::uint32_t kOptionsMinor = 6;

Result<std::unique_ptr<Plugin>> load_fresh(const std::filesystem::path& path,
                                           const std::string& type, const OptionMap& options) {
    // Declared before the library: destroyed after it is unloaded.
    auto services = std::make_unique<HostServices>();

    // A cut or corrupt file would crash the system loader (SIGBUS), not fail it.
    KEEL_TRY(base::check_shared_library_file(path.string()));

    boost::dll::fs::error_code ec;
    dlerror();  // clear, so that what we read below is this load's reason
    boost::dll::shared_library library(
        path, ec, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    if (ec || !library.is_loaded()) {
        const char* why = dlerror();
        return Error(KEEL_STATUS_UNAVAILABLE, std::string("cannot load as a shared library: ") +
                                                  (why != nullptr ? why : ec.message()));
    }
    if (!library.has(KEEL_PLUGIN_ENTRY_NAME))
        return Error(KEEL_STATUS_NOT_FOUND, std::string("no entry symbol '") +
                                                KEEL_PLUGIN_ENTRY_NAME +
                                                "' (not a keel plugin, or built without "
                                                "KEEL_PLUGIN_EXPORT on it)");
    auto& init = library.get<EntryFn>(KEEL_PLUGIN_ENTRY_NAME);

    const keel_plugin_api* table = nullptr;
    services->offer_options(options);
    Result<void> initialised = take_c_error(init(services->c(), &table));
    services->withdraw_options();
    if (!initialised) {
        Error e = std::move(initialised).error();
        return Error(e.code(), std::string(KEEL_PLUGIN_ENTRY_NAME) + " failed: " + e.message());
    }
    if (auto r = PluginApi::validate(table); !r) {
        abandon_initialised(table, path, services);
        return std::move(r).error();
    }
    // [options.older-plugin]: it never saw them; running it with other
    // settings than asked would be a silent surprise.
    if (!options.empty() && table->abi_minor < kOptionsMinor) {
        abandon_initialised(table, path, services);
        return Error(KEEL_STATUS_FAILED_PRECONDITION,
                     "given " + describe_options(options) + ", but the plugin declares ABI 1." +
                         std::to_string(table->abi_minor) + ", which cannot take options (1." +
                         std::to_string(kOptionsMinor) + " can); load it without options, or use its "
                         "environment variables");
    }
    auto plugin = std::make_unique<Plugin>(path, type, std::move(library), std::move(services), *table);
    // From here a failure destroys `plugin`: plugin_shutdown, then unload.
    KEEL_TRY(plugin->describe());
    return plugin;
}

class Registry {
public:
    static Registry& instance() {
        static base::NoDestructor<Registry> registry;  // plugins are released at exit too
        return *registry;
    }

    Result<std::shared_ptr<Plugin>> acquire(const std::filesystem::path& path,
                                            const std::string& type, const OptionMap& options) {
        std::unique_lock lock(mutex_);
        const std::string key = path.string();
        for (;;) {
            auto it = live_.find(key);
            if (it == live_.end()) break;
            if (auto alive = it->second.plugin.lock()) {
                if (it->second.options == options) return alive;
                return Error(KEEL_STATUS_FAILED_PRECONDITION,
                             "already loaded in this process with " + describe_options(it->second.options) +
                                 ", and this Runtime asks for " + describe_options(options) +
                                 " (a plugin file is loaded once per process; its settings are fixed "
                                 "until every Runtime and object of it is gone)");
            }
            retired_.wait(lock);  // its last owner is shutting it down right now
        }
        Result<std::unique_ptr<Plugin>> loaded = [&]() -> Result<std::unique_ptr<Plugin>> {
            try {
                return load_fresh(path, type, options);
            } catch (const std::exception& e) {
                return Error(KEEL_STATUS_INTERNAL, std::string("unexpected exception: ") + e.what());
            }
        }();
        if (!loaded) return std::move(loaded).error();
        Plugin* raw = loaded->get();
        std::shared_ptr<Plugin> shared(std::move(loaded).value().release(),
                                       [](Plugin* p) { Registry::instance().retire(p); });
        raw->shares().set_owner(shared);
        live_[key] = Entry{shared, raw, options};
        return shared;
    }

private:
    struct Entry {
        std::weak_ptr<Plugin> plugin;
        const Plugin* raw = nullptr;
        OptionMap options;  // what it was loaded with
    };

    // The deleter of every shared Plugin: shut down and unload under the
    // lock, so that no load of the same file overlaps the shutdown.
    void retire(Plugin* p) noexcept {
        std::unique_lock lock(mutex_);
        std::unique_ptr<Plugin> owned(p);
        owned.reset();
        for (auto it = live_.begin(); it != live_.end();) {
            if (it->second.raw == p)
                it = live_.erase(it);
            else
                ++it;
        }
        retired_.notify_all();
    }

    std::mutex mutex_;
    std::condition_variable retired_;
    std::map<std::string, Entry> live_;
};

}  // namespace

Result<std::shared_ptr<Plugin>> acquire_plugin(const std::filesystem::path& canonical_path,
                                               const std::string& type,
                                               const std::map<std::string, std::string>& options) {
    return Registry::instance().acquire(canonical_path, type, options);
}

}  // namespace keel::detail
