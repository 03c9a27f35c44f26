// The Level Zero loader (libze_loader.so.1), opened at run time rather than
// linked, so that the plugin loads on a machine without it and says so in
// plugin_info's status instead of being rejected by the dynamic linker.
#pragma once

#include <keel/result.hpp>

#include <level_zero/ze_api.h>

namespace keel::level_zero {

// The loader's entry points. Immutable once open_loader() succeeded, so
// read from any thread without locking.
struct ZeApi {
#define KEEL_ZE_FUNCTION(name) decltype(&::name) name = nullptr;
#include "ze_functions.inc"
#undef KEEL_ZE_FUNCTION
};

// Opens the loader named by KEEL_LEVEL_ZERO_LOADER (default
// "libze_loader.so.1", found the way dlopen finds libraries) and resolves
// every function. The first success is kept for the life of the process
// (the loader is never unloaded: drivers it loaded keep state until exit).
// Thread-safe. UNAVAILABLE, in dlopen's words, when it cannot be opened.
[[nodiscard]] Result<void> open_loader();

// The table; valid after open_loader() succeeded.
[[nodiscard]] const ZeApi& ze() noexcept;

}  // namespace keel::level_zero
