#include "ze_loader.hpp"
#include "plugin_state.hpp"

#include <keel/base/elf_check.hpp>
#include <keel/environment.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

namespace keel::level_zero {

namespace {

std::mutex g_mutex;
ZeApi g_api;         // written once under g_mutex, before g_opened is set
bool g_opened = false;

}  // namespace

Result<void> open_loader() {
    std::lock_guard lock(g_mutex);
    if (g_opened) return ok();
    // The option `loader`, else KEEL_LEVEL_ZERO_LOADER (plugin::Options).
    const std::string name(Plugin::options().text("loader").value_or("libze_loader.so.1"));
    // A path is checked first: a cut or corrupt file would crash the system loader.
    if (base::names_a_path(name)) {
        if (auto checked = base::check_shared_library_file(name); !checked)
            return Error(KEEL_STATUS_UNAVAILABLE, "no Level Zero loader: " + checked.error().message());
    }
    void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
        const char* why = dlerror();
        return Error(KEEL_STATUS_UNAVAILABLE,
                     "no Level Zero loader: " + std::string(why ? why : name + " cannot be opened"));
    }
    ZeApi api;
    std::string missing;
#define KEEL_ZE_FUNCTION(fn)                                                  \
    api.fn = reinterpret_cast<decltype(api.fn)>(dlsym(library, #fn));         \
    if (api.fn == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(#fn);
#include "ze_functions.inc"
#undef KEEL_ZE_FUNCTION
    if (!missing.empty()) {
        dlclose(library);
        return Error(KEEL_STATUS_UNAVAILABLE,
                     "the Level Zero loader " + name + " lacks " + missing + " (too old?)");
    }
    g_api = api;
    g_opened = true;  // `library` stays open for the life of the process
    return ok();
}

const ZeApi& ze() noexcept { return g_api; }

}  // namespace keel::level_zero
