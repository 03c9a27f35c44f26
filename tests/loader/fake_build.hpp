// What makes one fake plugin library differ from the others. The plugin's
// code (fake_plugin.cpp) is compiled once and linked into every library;
// each library adds fake_build.cpp, compiled with its own definitions, which
// fills in `fake_build` and exports (or hides) the entry point.
#pragma once

#include <keel/keel.h>

#include <cstdint>

namespace keel_fake {

enum class Variant : int {
    good = 0,
    no_entry = 1,           // keel_plugin_init is not exported
    wrong_major = 2,        // answers with another major's table
    init_fails = 3,
    missing_required = 4,   // device_free is null
    old_minor = 5,          // a 1.0 table; entries beyond it abort if called
    duplicate = 6,          // a second plugin of type "fake"
    type_mismatch = 7,      // reports a device type other than its file name's
    newer_minor = 8,        // the next minor's table, two entries longer
    minimum_of_minor = 9,   // `minor`'s required entries only, that minor's size
    comm = 10,              // the good plugin plus one-rank communication entries
};

struct Build {
    Variant variant;
    const char* type;  // the device type, as in libkeel_<type>.so
    // The keel.h minor the library was "built against"; 0 = the current one.
    unsigned minor;
    // Capability bits added to every device, to test how bits of a later
    // minor are judged.
    std::uint64_t extra_capabilities;
};

// Defined by fake_build.cpp; constant-initialised, so ready before any code runs.
extern const Build fake_build;

// The plugin's keel_plugin_init, which fake_build.cpp exports.
keel_error* plugin_init(const keel_host_services* host, const keel_plugin_api** out_api);

}  // namespace keel_fake
