// Host functions run on plugin threads and must not call into the plugin
// (keel.h, keel_host_fn). The trampoline marks the thread while user code
// runs, so that PluginApi can refuse such calls instead of deadlocking.
#pragma once

#include <keel/keel.h>

namespace keel::detail {

// How many host functions the calling thread is inside. Initial-exec: read
// on every plugin call, so without a __tls_get_addr call (an int of the
// static TLS surplus glibc keeps for libraries loaded later).
[[gnu::tls_model("initial-exec")]] extern thread_local int t_host_func_depth;

// True while the calling thread runs a host function's callable (or
// destroys it).
[[nodiscard]] inline bool in_host_func() noexcept { return t_host_func_depth > 0; }

// The keel_host_fn given to stream_enqueue_host_func; `user_data` is a
// released std::unique_ptr<HostFuncBase>, which this owns and destroys.
void host_func_trampoline(void* user_data, keel_status status) noexcept;
// The same for stream_enqueue_fallible_host_func: the callable's error
// becomes the returned keel_error (the plugin takes it over).
keel_error* fallible_host_func_trampoline(void* user_data, keel_status status) noexcept;

}  // namespace keel::detail
