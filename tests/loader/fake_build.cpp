// One fake plugin library's definitions (see fake_build.hpp), from the
// compile definitions tests/loader/CMakeLists.txt gives it.
#include "fake_build.hpp"

#ifndef KEEL_FAKE_MINOR
#define KEEL_FAKE_MINOR 0
#endif
#ifndef KEEL_FAKE_EXTRA_CAPABILITIES
#define KEEL_FAKE_EXTRA_CAPABILITIES 0u
#endif

namespace keel_fake {
constinit const Build fake_build{static_cast<Variant>(KEEL_FAKE_VARIANT), KEEL_FAKE_TYPE, KEEL_FAKE_MINOR,
                                 KEEL_FAKE_EXTRA_CAPABILITIES};
}  // namespace keel_fake

#if KEEL_FAKE_VARIANT == 1  // Variant::no_entry
// Built without the export: the symbol stays hidden, so the runtime cannot find it.
extern "C" keel_error* keel_plugin_init(const keel_host_services* host, const keel_plugin_api** out_api) {
    return keel_fake::plugin_init(host, out_api);
}
#else
extern "C" KEEL_PLUGIN_EXPORT keel_error* keel_plugin_init(const keel_host_services* host,
                                                           const keel_plugin_api** out_api) {
    return keel_fake::plugin_init(host, out_api);
}
#endif
