// The entries keel.h marks [required] in keel_plugin_api, in table order, as
// an X-macro: KEEL_REQUIRED_PLUGIN_ENTRIES(X) expands X(entry) for each. The
// runtime's table validation and keel-cts's table check both read this list;
// the docs test checks it against keel.h's [required] marks.
#pragma once

#define KEEL_REQUIRED_PLUGIN_ENTRIES(X)                                                           \
    X(plugin_info)                                                                                \
    X(plugin_shutdown)                                                                            \
    X(device_count)                                                                               \
    X(device_get)                                                                                 \
    X(device_properties)                                                                          \
    X(stream_create)                                                                              \
    X(stream_destroy)                                                                             \
    X(stream_synchronize)                                                                         \
    X(stream_query)                                                                               \
    X(stream_wait_event)                                                                          \
    X(stream_enqueue_host_func)                                                                   \
    X(event_create)                                                                               \
    X(event_destroy)                                                                              \
    X(event_record)                                                                               \
    X(event_query)                                                                                \
    X(event_synchronize)                                                                          \
    X(device_alloc)                                                                               \
    X(device_free)                                                                                \
    X(memcpy_h2d)                                                                                 \
    X(memcpy_d2h)                                                                                 \
    X(memcpy_d2d)                                                                                 \
    X(memset_d8)
