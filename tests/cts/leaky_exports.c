/* A plugin whose build forgot the version script: one helper is exported
 * besides keel_plugin_init, which keel-cts must report. */
#include <keel/keel.h>

__attribute__((visibility("default"))) int keel_leaked_helper(void) { return 1; }

KEEL_PLUGIN_EXPORT keel_error* keel_plugin_init(const keel_host_services* host,
                                                const keel_plugin_api** out_api) {
    (void)host;
    (void)out_api;
    return 0; /* never loaded: keel-cts stops at its checks of the file */
}
