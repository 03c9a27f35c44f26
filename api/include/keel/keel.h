/*
 * keel.h — the stable C ABI between the keel runtime and device plugins.
 *
 * Valid C99 and C++. A plugin is a shared library that exports exactly one
 * symbol, KEEL_PLUGIN_ENTRY_NAME (see keel_plugin_entry_fn). Everything else
 * crosses the boundary through the tables and structs declared here.
 *
 * How rules are written
 *   Every rule of this header starts with a stable identifier and the minor
 *   that introduced it or last changed what it asks of a plugin, next to
 *   what it governs: `[area.rule-name] since 1.N: rule`. A plugin is held to
 *   the rules whose minor is at most the minor it declares (its table's
 *   abi_minor); a rule of a later minor does not bind it, and the runtime
 *   expects no more of it (api/CHANGELOG.md says what it gets instead).
 *   keel-cts names the identifier and the minor of the rule each check
 *   tests. A rule that holds "where the plugin can tell" binds no plugin:
 *   keel-cts reports a plugin that does not tell as advice, never a failure.
 *
 * ---------------------------------------------------------------------------
 * Versioning
 *   [abi.major] since 1.0: KEEL_ABI_VERSION_MAJOR changes only for
 *     incompatible changes. The runtime loads a plugin only when the majors
 *     are equal.
 *   [abi.any-minor-loads] since 1.0: KEEL_ABI_VERSION_MINOR grows when
 *     entries or fields are appended, or when a rule changes. Any minor
 *     loads: the runtime reads a table or struct only up to the
 *     `struct_size` the other side wrote. Entries beyond a plugin's
 *     `struct_size` (an older minor) are absent; entries beyond the
 *     runtime's own size (a newer minor) are ignored.
 *   [abi.append-only] since 1.0: structs and tables are APPEND-ONLY: never
 *     reorder, resize or remove a field. Each append bumps the minor and
 *     adds a line to api/CHANGELOG.md.
 *   [abi.struct-size] since 1.0: every struct that crosses the ABI starts
 *     with `size_t struct_size`; its expected size for this version is
 *     KEEL_<NAME>_STRUCT_SIZE, checked by a static_assert against its last
 *     field. Enums are pinned to 32 bits with a *_FORCE_UINT32 sentinel.
 *
 * Errors (one convention for every entry)
 *   [error.ownership] since 1.0: fallible entries return `keel_error*`:
 *     NULL on success, otherwise an error object owned by the CALLER, who
 *     must release it exactly once with keel_error_destroy(). The object
 *     carries its own destroy function, so it can be released without
 *     knowing which plugin made it.
 *   [error.message] since 1.0: the message is NUL-terminated UTF-8, starts
 *     with where it comes from ("[cpu stream_synchronize] ..."), and lives
 *     as long as the error.
 *   [error.outputs-on-success] since 1.0: output parameters are written
 *     only on success; a refused enqueue enqueues nothing.
 *   [error.no-exceptions] since 1.0: no C++ exception ever crosses this
 *     boundary; a plugin catches everything at its entry points.
 *   [error.destroy-before-unload] since 1.0: an error's message and destroy
 *     function live in the plugin that made it: destroy every error before
 *     that plugin is shut down and its library unloaded (the runtime
 *     destroys each one as soon as it has copied the code and message).
 *
 * Asynchronous errors
 *   [stream.sticky-error] since 1.0: an operation that fails while
 *   executing on a stream puts that stream in an error state (a "sticky"
 *   error): later operations on it are skipped, and the error is returned by
 *   stream_synchronize/stream_query on that stream, by
 *   event_query/event_synchronize of events recorded on it after the
 *   failure, and by later enqueue calls on it. Such a stream can only be
 *   destroyed. (How errors travel to other streams: "ABI 1.3: error
 *   propagation" below.)
 *
 * Threads
 *   [thread.any-thread] since 1.0: unless an entry says otherwise, every
 *     entry may be called from any host thread, concurrently with any other
 *     entry.
 *   [thread.destroy-after-last-use] since 1.0: a handle must not be
 *     destroyed while another thread is still using it (the caller orders
 *     destruction after last use, as with free()).
 *   [thread.enqueue-order] since 1.0: operations enqueued on one stream
 *     from several threads are ordered in the order the enqueue calls
 *     return.
 *
 * Enqueueing never blocks
 *   [enqueue.never-blocks] since 1.0: the entries that enqueue work on a
 *   stream (stream_wait_event, stream_enqueue_host_func, event_record,
 *   memcpy_h2d, memcpy_d2h, memcpy_d2d, memset_d8, kernel_launch,
 *   memcpy_h2d_inline, and stream_enqueue_fallible_host_func from 1.4)
 *   return without waiting for any work to execute: not for earlier work of
 *   this or any other stream, and not for the operation they enqueue (they
 *   may take short locks, allocate and copy their arguments). Callers rely
 *   on it: a stream may be held back for as long as a host function on it
 *   waits for the caller's next step (the runtime's staging of copies reuses
 *   its blocks while later copies are enqueued behind earlier ones), so an
 *   enqueue that waited for the device could deadlock. What may wait:
 *   stream_synchronize, event_synchronize and stream_destroy wait for the
 *   device; from 1.4 comm_create and comm_destroy wait for peers and
 *   operations, and the FIRST comm_* operation of a communicator with a
 *   given peer may wait, bounded by the communicator's timeout, until that
 *   peer enqueues its matching operation ([comm.first-operation-may-block]).
 *   Nothing else does.
 *
 * Forward progress
 *   [stream.forward-progress] since 1.0: work enqueued on a stream runs
 *   within a bounded time even if nothing waits for it: no host wait
 *   (synchronize, query) and no other stream's wait is needed to start it.
 *   A plugin may hold work back for as long as it likes (a checker that runs
 *   work late to expose early frees), but not without bound. Callers rely on
 *   it: a correct program may wait for the effect of a host function on a
 *   stream (a flag it sets) without any keel wait, and must finish. Written
 *   down at 1.4, it binds every minor (it has always held on devices).
 *
 * Handles
 *   [handle.lifetime] since 1.0: a handle is valid only with the plugin that
 *     made it, and only until it is destroyed (streams, events; from 1.4
 *     communicators, by comm_destroy) or the plugin shuts down (devices,
 *     kernels, and the native handles of devices). A stream's native handle
 *     lives until stream_destroy.
 *   [handle.caller-bugs] since 1.0: passing a handle of another plugin, a
 *     destroyed handle, or a device address outside every live allocation is
 *     a caller bug: a plugin detects what it can cheaply (a null handle
 *     always, foreign or dead handles where it keeps a registry) and returns
 *     KEEL_STATUS_INVALID_ARGUMENT where it can tell, otherwise the
 *     behaviour is undefined.
 *   [handle.runtime-checks] since 1.0: the runtime never passes such
 *     handles: its objects own their handles (a moved-from or released
 *     object is refused by the runtime with a clear error before any plugin
 *     call), and it checks that every argument belongs to the same device
 *     and every range lies within its allocation before it calls.
 *
 * Memory
 *   [memory.device-addr] since 1.0: device memory is named by
 *   keel_device_addr, an integer: it is NOT a host pointer and must never be
 *   dereferenced on the host (on devices whose memory is not
 *   host-addressable doing so faults). Address arithmetic (addr + offset
 *   within an allocation) is allowed. Pinned host memory is an ordinary host
 *   pointer, page-locked where the device supports it.
 *
 * Plugin files and where the runtime finds them
 *   [plugin.file-name] since 1.1: a plugin is a file named
 *     libkeel_<type>.so, <type> of [a-z0-9_]+ and equal to plugin_info's
 *     device_type; its devices are "<type>:<index>".
 *   [plugin.search-path] since 1.1: the runtime searches, in order:
 *     RuntimeOptions::plugin_path, the colon-separated KEEL_PLUGIN_PATH,
 *     then keel/plugins beside libkeel_runtime.so (an install's
 *     <libdir>/keel/plugins, found from where the library is at run time).
 *     Directories are scanned for libkeel_*.so in name order; the first
 *     plugin of a type wins and later ones are rejected. A plugin file is
 *     loaded once per process, shared by every Runtime that finds it while
 *     another still holds it.
 *   The SDK builds such a file exporting only keel_plugin_init: CMake's
 *   find_package(keel) + keel_add_plugin, or pkg-config keel-plugin-sdk.
 *
 * Conformance (keel-cts, installed with keel)
 *   `keel-cts <plugin file or directory>` checks the file (exports, version
 *   negotiation, table, capability flags) and runs keel's conformance suite
 *   on each device. [required] entries are tested; a test that needs an
 *   absent [optional] entry is reported skipped with the reason, never
 *   failed. Each check names the identifier and minor of the rule it tests
 *   (see "How rules are written").
 *   [table.flags-agree] since 1.0: the table and the flags agree:
 *     KEEL_DEVICE_CAP_EVENT_TIMING iff event_elapsed_time is present,
 *     KEEL_DEVICE_CAP_PINNED_MEMORY only with host_alloc; host_alloc and
 *     host_free, kernel_get and kernel_launch are pairs.
 *   [kernel.builtin-kernels] since 1.1: the argument layouts of fill, axpy,
 *     lerp and lerp_grad (order, kinds, dtypes, element counts) are in
 *     docs/kernels.md, installed as <prefix>/share/doc/keel/kernels.md; a
 *     plugin with kernel_get serves at least fill and axpy.
 *
 * Edge cases (every plugin of 1.1 or later answers them the same way; a
 *   1.0 plugin is held to what keel.h 1.0 said, which named none of them)
 *   [edge.zero-bytes] since 1.1: a copy or memset of 0 bytes succeeds and
 *     enqueues nothing (its host pointer may then be NULL; its device
 *     address is not checked).
 *   [edge.second-free] since 1.1: device_free of an address that is not a
 *     live allocation of that device (a second free, another device's
 *     memory) is KEEL_STATUS_INVALID_ARGUMENT where the plugin keeps a
 *     registry, else undefined. The runtime frees each allocation exactly
 *     once.
 *   [edge.other-device] since 1.1: device memory of another device passed
 *     to a copy, memset or kernel is outside this device's allocations:
 *     KEEL_STATUS_OUT_OF_RANGE (copies) or KEEL_STATUS_INVALID_ARGUMENT
 *     (kernel arguments) where the plugin can tell; a stream, event or
 *     kernel handle of another device is KEEL_STATUS_INVALID_ARGUMENT where
 *     it can tell. The runtime checks devices before it calls, so it never
 *     passes either ([handle.runtime-checks]).
 *   [edge.device-get-past-end] since 1.1: device_get with index >=
 *     device_count is KEEL_STATUS_NOT_FOUND.
 *   [edge.elapsed-time-incomplete] since 1.1: event_elapsed_time never
 *     waits: an event not yet complete (or never recorded), like one
 *     created without KEEL_EVENT_TIMING, is KEEL_STATUS_FAILED_PRECONDITION.
 *   [edge.host-func-on-failed-stream] since 1.1: stream_enqueue_host_func
 *     on a stream already known to be in error returns that error and
 *     enqueues nothing (fn never runs; user_data stays the caller's). A
 *     function enqueued before the failure runs with the error as its status
 *     (see keel_host_fn).
 *
 * Data models
 *   [abi.data-models] since 1.0: ILP32 and LP64 (32- and 64-bit Linux,
 *   macOS): the layout checks at the end of this file hold on both; the
 *   structs with 64-bit fields are pinned to exact sizes on LP64 only, since
 *   32-bit ABIs pad uint64_t differently (struct_size still lets both sides
 *   agree). keel's CI compiles this header for i686, armv7, x32, aarch64 and
 *   x86_64.
 * ---------------------------------------------------------------------------
 */
#ifndef KEEL_KEEL_H
#define KEEL_KEEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KEEL_ABI_VERSION_MAJOR 1u
#define KEEL_ABI_VERSION_MINOR 6u

#if defined(_WIN32)
#define KEEL_PLUGIN_EXPORT __declspec(dllexport)
#else
#define KEEL_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#if defined(__cplusplus)
#define KEEL_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define KEEL_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#else
/* C99: an array of negative size fails to compile. */
#define KEEL_STATIC_ASSERT_NAME2(line) keel_static_assert_line_##line
#define KEEL_STATIC_ASSERT_NAME(line) KEEL_STATIC_ASSERT_NAME2(line)
#define KEEL_STATIC_ASSERT(cond, msg) \
    typedef char KEEL_STATIC_ASSERT_NAME(__LINE__)[(cond) ? 1 : -1]
#endif

/* Size of a struct up to and including `last_field`. */
#define KEEL_STRUCT_SIZE(type, last_field) \
    (offsetof(type, last_field) + sizeof(((type*)0)->last_field))

/* ======================================================================== */
/* Status codes and errors                                                  */
/* ======================================================================== */

typedef enum keel_status {
    KEEL_STATUS_OK = 0,
    KEEL_STATUS_INVALID_ARGUMENT = 1,  /* null handle, bad size, bad kernel args */
    KEEL_STATUS_NOT_FOUND = 2,         /* unknown device, kernel name */
    KEEL_STATUS_OUT_OF_MEMORY = 3,     /* device or pinned allocation failed */
    KEEL_STATUS_UNIMPLEMENTED = 4,     /* optional entry absent / feature not supported */
    KEEL_STATUS_UNAVAILABLE = 5,       /* no driver, no device */
    KEEL_STATUS_VERSION_MISMATCH = 6,  /* ABI major differs */
    KEEL_STATUS_DEVICE_ERROR = 7,      /* an asynchronous operation failed on the device */
    KEEL_STATUS_OUT_OF_RANGE = 8,      /* access outside an allocation */
    KEEL_STATUS_FAILED_PRECONDITION = 9, /* e.g. query of an event never recorded with timing */
    KEEL_STATUS_INTERNAL = 10,         /* a bug in a plugin or the runtime */
    KEEL_STATUS_FORCE_UINT32 = 0x7fffffff
} keel_status;

typedef struct keel_error keel_error;

/* An error. Created by whoever reports it; owned by whoever receives it. */
struct keel_error {
    size_t struct_size;
    keel_status code;
    /* NUL-terminated; valid until `destroy` is called. Never NULL. */
    const char* message;
    /* Releases the error and its message. Set by the creator. */
    void (*destroy)(keel_error* self);
};
#define KEEL_ERROR_STRUCT_SIZE KEEL_STRUCT_SIZE(keel_error, destroy)

/* Releases an error returned by any entry. Accepts NULL. */
static inline void keel_error_destroy(keel_error* error) {
    if (error) error->destroy(error);
}

/* ======================================================================== */
/* Opaque handles                                                           */
/* ======================================================================== */

/* A device. Owned by the plugin; valid from device_get until plugin_shutdown. */
typedef struct keel_device_t* keel_device;
/* A stream. Owned by the caller from stream_create until stream_destroy.
 * [stream.in-order] since 1.0: a stream is an in-order queue of work on one
 * device: each operation starts after the previous one of the stream
 * completed, and its effects are visible to the operations after it. */
typedef struct keel_stream_t* keel_stream;
/* An event: a point in a stream's work. Owned by the caller from
 * event_create until event_destroy. */
typedef struct keel_event_t* keel_event;
/* A kernel. Owned by the plugin; valid until plugin_shutdown. */
typedef struct keel_kernel_t* keel_kernel;

/* Address of device memory. Not a host pointer (see "Memory" above). */
typedef uint64_t keel_device_addr;

/* ======================================================================== */
/* Logging and host services (runtime -> plugin)                            */
/* ======================================================================== */

typedef enum keel_log_level {
    KEEL_LOG_TRACE = 0,
    KEEL_LOG_DEBUG = 1,
    KEEL_LOG_INFO = 2,
    KEEL_LOG_WARN = 3,
    KEEL_LOG_ERROR = 4,
    KEEL_LOG_LEVEL_FORCE_UINT32 = 0x7fffffff
} keel_log_level;

/* Services the runtime offers to a plugin, passed to the entry symbol.
 * [host.services-lifetime] since 1.0: the struct and everything it points to
 * stay valid until plugin_shutdown returns (the options of 1.6 only during
 * keel_plugin_init: a plugin copies what it keeps). */
typedef struct keel_host_services {
    size_t struct_size;
    /* The ABI version the runtime was built against. */
    uint32_t abi_major;
    uint32_t abi_minor;
    /* Opaque context passed back to every service. */
    void* context;
    /* Logs one message through the runtime's logger. Thread-safe; may be
     * called from any plugin thread, including stream workers. `message` is
     * copied before return. */
    void (*log)(void* context, keel_log_level level, const char* message);
    /* Cheap check whether `level` would be logged, so a plugin can skip
     * formatting. Thread-safe. */
    int32_t (*log_enabled)(void* context, keel_log_level level);

    /* ---- ABI 1.6: plugin options ---- */
    /* The options the caller gave this plugin at load (see "Plugin
     * options" below): `option_count` keel_option structs, `option_stride`
     * bytes apart (use keel_option_at). NULL and 0 when none were given.
     * Valid only during keel_plugin_init. */
    const struct keel_option* options;
    size_t option_count;
    size_t option_stride;
    /* ---- end of ABI 1.6: plugin options ---- */
} keel_host_services;
#define KEEL_HOST_SERVICES_STRUCT_SIZE KEEL_STRUCT_SIZE(keel_host_services, option_stride)
/* keel_host_services as 1.0 to 1.5 define it (no options). */
#define KEEL_HOST_SERVICES_STRUCT_SIZE_1_0 KEEL_STRUCT_SIZE(keel_host_services, log_enabled)

/* ======================================================================== */
/* Plugin and device description                                            */
/* ======================================================================== */

typedef struct keel_plugin_info {
    size_t struct_size;  /* [in] set by the caller */
    /* Device type used in device names ("cpu" in "cpu:0"): [a-z0-9_]+.
     * Static storage owned by the plugin, valid until plugin_shutdown. */
    const char* device_type;
    /* Human-readable plugin version ("0.1.0"); same lifetime. */
    const char* version;
    /* Free-form status, e.g. why zero devices are reported ("no CUDA driver:
     * ..."), or "" when there is nothing to say; same lifetime. */
    const char* status;
} keel_plugin_info;
#define KEEL_PLUGIN_INFO_STRUCT_SIZE KEEL_STRUCT_SIZE(keel_plugin_info, status)

/* Capability flags of a device.
 * [cap.defined-bits] since 1.6: a plugin sets only the bits defined at the
 * minor it declares. The runtime ignores a bit that the plugin's minor does
 * not define, so a plugin of an older minor may leave any later bit set
 * (keel-cts reports it as advice, never as a failure). */
typedef enum keel_device_capability {
    /* The host may dereference device addresses (unified memory). */
    KEEL_DEVICE_CAP_HOST_ADDRESSABLE = 1u << 0,
    /* event_elapsed_time works for events created with KEEL_EVENT_TIMING. */
    KEEL_DEVICE_CAP_EVENT_TIMING = 1u << 1,
    /* Streams of this device run concurrently with each other. */
    KEEL_DEVICE_CAP_CONCURRENT_STREAMS = 1u << 2,
    /* host_alloc returns page-locked memory that speeds up copies. */
    KEEL_DEVICE_CAP_PINNED_MEMORY = 1u << 3,
    /* [cap.pinned-copies-only] since 1.3: memcpy_h2d/memcpy_d2h take only
     * memory from host_alloc: the device cannot reach pageable memory when a
     * copy executes, and the runtime stages pageable memory for it (see
     * memcpy_h2d). Needs host_alloc; ignored in a plugin that declares an
     * older minor. */
    KEEL_DEVICE_CAP_PINNED_COPIES_ONLY = 1u << 4,
    /* [multidev.peer-copy-cap] since 1.6: device_can_copy_peer and
     * memcpy_peer are present, and this device copies to and from the memory
     * of the other devices of its plugin that device_can_copy_peer names
     * (see "ABI 1.6: several devices"). Ignored in a plugin that declares
     * an older minor. */
    KEEL_DEVICE_CAP_PEER_COPY = 1u << 5,
    /* [multidev.peer-wait-cap] since 1.6: stream_wait_event of a stream of
     * this device takes an event of any other device of its plugin that sets
     * this bit too, with every rule of a wait on an event of its own device
     * (the point is captured at the call; errors propagate as 1.3 says).
     * Without it such a wait is INVALID_ARGUMENT and the runtime bridges it.
     * Ignored in a plugin that declares an older minor. */
    KEEL_DEVICE_CAP_PEER_EVENT_WAIT = 1u << 6,
    /* Since 1.6: ipc_memory_* share device memory with other processes
     * (see ipc.memory-set). */
    KEEL_DEVICE_CAP_IPC_MEMORY = 1u << 7,
    /* Since 1.6: ipc_event_* and KEEL_EVENT_INTERPROCESS share events with
     * other processes (see ipc.event-set). */
    KEEL_DEVICE_CAP_IPC_EVENTS = 1u << 8,
    KEEL_DEVICE_CAP_FORCE_UINT32 = 0x7fffffff
} keel_device_capability;

typedef struct keel_device_properties {
    size_t struct_size;        /* [in] set by the caller */
    char name[256];            /* NUL-terminated, e.g. "NVIDIA H100 80GB HBM3" */
    char vendor[64];           /* NUL-terminated, e.g. "NVIDIA" */
    uint64_t total_memory;     /* bytes of device memory */
    uint32_t capabilities;     /* keel_device_capability bits */
    uint32_t compute_units;    /* SMs, cores, EUs: what the device calls them */
    /* Largest device allocation, in bytes (0 = total_memory). */
    uint64_t max_allocation;
    /* Alignment of every device_alloc result, in bytes (power of two). */
    uint64_t alloc_alignment;
} keel_device_properties;
#define KEEL_DEVICE_PROPERTIES_STRUCT_SIZE \
    KEEL_STRUCT_SIZE(keel_device_properties, alloc_alignment)

/* ======================================================================== */
/* Kernel arguments                                                         */
/* ======================================================================== */

typedef enum keel_dtype {
    KEEL_DTYPE_INVALID = 0,
    KEEL_DTYPE_F16 = 1,
    KEEL_DTYPE_BF16 = 2,
    KEEL_DTYPE_F32 = 3,
    KEEL_DTYPE_F64 = 4,
    KEEL_DTYPE_I8 = 5,
    KEEL_DTYPE_I32 = 6,
    KEEL_DTYPE_I64 = 7,
    KEEL_DTYPE_U8 = 8,
    KEEL_DTYPE_U32 = 9,
    KEEL_DTYPE_U64 = 10,
    KEEL_DTYPE_FORCE_UINT32 = 0x7fffffff
} keel_dtype;

typedef enum keel_arg_kind {
    /* Device memory: `buffer.addr` with `buffer.size` bytes. `dtype` is its
     * element type. A buffer with addr 0 and size 0 is an absent optional
     * output.
     * [kernel.buffer-bounds] since 1.0: the kernel touches only
     * [addr, addr + size) of a buffer argument. */
    KEEL_ARG_BUFFER = 1,
    /* A value of type `dtype` in the matching member of `scalar`
     * (F16/BF16 as raw bits in `u64`'s low 16 bits). */
    KEEL_ARG_SCALAR = 2,
    /* A small array of int64 (shapes, strides) in host memory. `dtype` is
     * KEEL_DTYPE_I64. */
    KEEL_ARG_INT_ARRAY = 3,
    KEEL_ARG_KIND_FORCE_UINT32 = 0x7fffffff
} keel_arg_kind;

typedef struct keel_kernel_arg {
    size_t struct_size;
    keel_arg_kind kind;
    keel_dtype dtype;
    union {
        struct {
            keel_device_addr addr;
            uint64_t size;
        } buffer;
        union {
            double f64;
            float f32;
            int64_t i64;
            uint64_t u64;
        } scalar;
        struct {
            const int64_t* data;  /* host memory; read before launch returns */
            uint64_t count;
        } int_array;
    } value;
} keel_kernel_arg;
#define KEEL_KERNEL_ARG_STRUCT_SIZE KEEL_STRUCT_SIZE(keel_kernel_arg, value)

/* Arguments of one launch. The plugin reads `args` with a stride of
 * `arg_struct_size` (so a caller built against a later minor, with a larger
 * keel_kernel_arg, still works): use keel_kernel_arg_at(). */
typedef struct keel_launch_args {
    size_t struct_size;
    const keel_kernel_arg* args;
    size_t arg_count;
    size_t arg_struct_size;  /* sizeof(keel_kernel_arg) of the caller */
} keel_launch_args;
#define KEEL_LAUNCH_ARGS_STRUCT_SIZE KEEL_STRUCT_SIZE(keel_launch_args, arg_struct_size)

static inline const keel_kernel_arg* keel_kernel_arg_at(const keel_launch_args* launch,
                                                        size_t index) {
    return (const keel_kernel_arg*)((const char*)launch->args +
                                    index * launch->arg_struct_size);
}

/* ======================================================================== */
/* Flags                                                                    */
/* ======================================================================== */

typedef enum keel_event_flags {
    KEEL_EVENT_DEFAULT = 0,         /* no timing: cheapest */
    KEEL_EVENT_TIMING = 1u << 0,    /* event_elapsed_time may be used */
    /* Since 1.6: ipc_event_export may export it; only on a device with
     * KEEL_DEVICE_CAP_IPC_EVENTS, never with KEEL_EVENT_TIMING (else
     * INVALID_ARGUMENT). */
    KEEL_EVENT_INTERPROCESS = 1u << 1,
    KEEL_EVENT_FLAGS_FORCE_UINT32 = 0x7fffffff
} keel_event_flags;

/* A function run by a stream when it reaches it (stream_enqueue_host_func).
 * [host-func.status] since 1.0: `status` is KEEL_STATUS_OK, or the stream's
 * error if it failed earlier (the function still runs, so resources it
 * releases are never leaked).
 * [host-func.plugin-thread] since 1.0: it runs on a plugin-owned thread,
 * never inside the enqueue call; it must not block for long and must NOT
 * call any entry of the plugin table (it may deadlock, as in CUDA). */
typedef void (*keel_host_fn)(void* user_data, keel_status status);

/* ---- ABI 1.4: host functions that fail their stream ---- */
/* A host function that may fail its stream
 * (stream_enqueue_fallible_host_func).
 * [host-func.fallible-return] since 1.4: it runs as a keel_host_fn does (same
 * thread, same `status`, same rules) and returns NULL to let the stream go
 * on, or an error object, which the plugin takes over and destroys (with
 * keel_error_destroy, after copying its code and message): the stream then
 * fails at this point. When `status` is not KEEL_STATUS_OK the stream has
 * failed already and keeps its first error: a returned error is destroyed
 * and ignored. */
typedef keel_error* (*keel_fallible_host_fn)(void* user_data, keel_status status);
/* ---- end of ABI 1.4: host functions that fail their stream ---- */

/* ======================================================================== */
/* Native handles (ABI 1.1)                                                 */
/* ======================================================================== */

/* What a keel_native_handle holds. A framework checks the kind before it
 * casts `value`; a kind it does not know means "not for you". */
typedef enum keel_native_handle_kind {
    KEEL_NATIVE_HANDLE_NONE = 0,
    /* CUDA: a CUdevice ordinal (int) in `value`. */
    KEEL_NATIVE_HANDLE_CUDA_DEVICE = 1,
    /* CUDA: a cudaStream_t (== CUstream) in `value` (uintptr_t). */
    KEEL_NATIVE_HANDLE_CUDA_STREAM = 2,
    /* Level Zero: a ze_device_handle_t in `value` (uintptr_t). */
    KEEL_NATIVE_HANDLE_LEVEL_ZERO_DEVICE = 3,
    /* Level Zero: an immediate ze_command_list_handle_t in `value`. */
    KEEL_NATIVE_HANDLE_LEVEL_ZERO_COMMAND_LIST = 4,
    /* Level Zero: a ze_command_queue_handle_t in `value`. */
    KEEL_NATIVE_HANDLE_LEVEL_ZERO_COMMAND_QUEUE = 5,
    /* Kinds from here on are defined (and documented) by one plugin. */
    KEEL_NATIVE_HANDLE_PLUGIN_DEFINED = 0x10000,
    KEEL_NATIVE_HANDLE_KIND_FORCE_UINT32 = 0x7fffffff
} keel_native_handle_kind;

/* The driver object behind a keel handle, so a framework can run a vendor
 * library (cuBLAS, NCCL, oneDNN) on keel's device and stream. */
typedef struct keel_native_handle {
    size_t struct_size;            /* [in] set by the caller */
    keel_native_handle_kind kind;  /* what `value` is */
    /* The handle: a pointer converted through uintptr_t, or an integer. */
    uint64_t value;
} keel_native_handle;
#define KEEL_NATIVE_HANDLE_STRUCT_SIZE KEEL_STRUCT_SIZE(keel_native_handle, value)

/* ======================================================================== */
/* Pageable staging statistics (ABI 1.2)                                    */
/* ======================================================================== */

/* What a plugin's staging of pageable host memory (memcpy_h2d/memcpy_d2h
 * with memory not from host_alloc) has done on one device, so a framework
 * can see whether its copies allocate pinned memory in steady state and
 * whether they run out of it. Counters count since the device was first
 * used; the byte figures are the state now. */
typedef struct keel_pageable_staging_stats {
    size_t struct_size;              /* [in] set by the caller */
    uint64_t copies;                 /* copies staged through pinned blocks */
    uint64_t short_copies;           /* of those, copies that got fewer blocks than wanted */
    uint64_t refused_copies;         /* copies that found no block free (slower path or error) */
    uint64_t pinned_allocations;     /* pinned blocks the plugin allocated */
    uint64_t pinned_frees;           /* pinned blocks it freed */
    uint64_t block_reuses;           /* blocks served from its cache */
    uint64_t held_bytes;             /* pinned memory held now, lent or idle */
    uint64_t lent_bytes;             /* of that, lent to copies in flight */
    uint64_t capacity_bytes;         /* the bound on held_bytes */
    uint64_t host_copy_threads;      /* threads copying between pageable memory and blocks (0: none yet) */
} keel_pageable_staging_stats;
#define KEEL_PAGEABLE_STAGING_STATS_STRUCT_SIZE KEEL_STRUCT_SIZE(keel_pageable_staging_stats, host_copy_threads)

/* ======================================================================== */
/* Checker annotations (ABI 1.3)                                            */
/* ======================================================================== */

/* What stream_annotate_range says about a range of device memory. */
typedef enum keel_range_annotation {
    KEEL_RANGE_RELEASED = 1,  /* went back to an allocator's cache */
    KEEL_RANGE_ACQUIRED = 2,  /* handed to a new owner */
    KEEL_RANGE_ANNOTATION_FORCE_UINT32 = 0x7fffffff
} keel_range_annotation;

/* ======================================================================== */
/* Plugin options (ABI 1.6)                                                 */
/* ======================================================================== */

/*
 * A plugin's settings (the CPU device's memory, its checker, a library to
 * open) have three sources, in this order of precedence: an option the
 * caller gave when it loaded the plugin, the plugin's environment variable
 * for that setting (KEEL_CPU_MEMORY_BYTES), the plugin's default. Options
 * let a framework configure a plugin without setting process-wide
 * variables; PJRT's create options are the model.
 *
 * [options.read-at-init] since 1.6: a plugin declaring 1.6 or later reads
 *   every option of keel_host_services during keel_plugin_init, before its
 *   devices exist, and copies what it keeps. An option overrides the
 *   environment variable of the same setting, which overrides the default.
 *   A key the plugin does not take, a key given twice, or a value it does
 *   not accept fails keel_plugin_init with KEEL_STATUS_INVALID_ARGUMENT and
 *   a message naming the key (for an unknown key, also the keys it takes):
 *   never ignored, never a silent fallback. A plugin that takes no options
 *   refuses every one.
 * [options.older-plugin] since 1.6: a plugin of an older minor cannot see
 *   options. The runtime, when it was given options for the device type of
 *   such a plugin, shuts it down right after keel_plugin_init and rejects
 *   it (KEEL_STATUS_FAILED_PRECONDITION, naming the options and the
 *   plugin's minor) rather than run it with settings other than asked;
 *   given no options, it loads as before.
 * [options.info] since 1.6: plugin_option_info describes every setting the
 *   plugin takes as an option, with the value in effect and its source.
 */

/* One option: a key and its value, both NUL-terminated UTF-8 text. The key
 * is of [a-z0-9_]+ ("memory_bytes"); the value is spelt as the setting's
 * environment variable accepts it ("1G"). */
typedef struct keel_option {
    size_t struct_size;
    const char* key;
    const char* value;
} keel_option;
#define KEEL_OPTION_STRUCT_SIZE KEEL_STRUCT_SIZE(keel_option, value)

/* Option `index` of `host` (index < host->option_count), read with the
 * caller's stride so that a caller of a later minor, with a larger
 * keel_option, still works. Only for a host whose struct_size holds the
 * option fields (KEEL_HOST_SERVICES_STRUCT_SIZE). */
static inline const keel_option* keel_option_at(const keel_host_services* host, size_t index) {
    return (const keel_option*)((const char*)host->options + index * host->option_stride);
}

/* Where the value in effect of a setting came from. */
typedef enum keel_option_source {
    KEEL_OPTION_SOURCE_DEFAULT = 0,      /* the plugin's default */
    KEEL_OPTION_SOURCE_ENVIRONMENT = 1,  /* the setting's environment variable */
    KEEL_OPTION_SOURCE_OPTION = 2,       /* an option given at load */
    KEEL_OPTION_SOURCE_FORCE_UINT32 = 0x7fffffff
} keel_option_source;

/* What plugin_option_info says of one setting. Strings are owned by the
 * plugin and valid until plugin_shutdown; none is NULL. */
typedef struct keel_option_info {
    size_t struct_size;            /* [in] set by the caller */
    const char* key;               /* the option's key ("memory_bytes") */
    const char* value;             /* the value in effect, as text ("4G") */
    keel_option_source source;     /* where `value` came from */
    /* The environment variable that sets it when no option does
     * ("KEEL_CPU_MEMORY_BYTES"), or "" when none. */
    const char* environment_variable;
    const char* accepts;           /* what a valid value looks like */
    const char* meaning;           /* one line: what the setting does */
} keel_option_info;
#define KEEL_OPTION_INFO_STRUCT_SIZE KEEL_STRUCT_SIZE(keel_option_info, meaning)

/* ======================================================================== */
/* Communication (ABI 1.4)                                                  */
/* ======================================================================== */

/* A communicator: `size` processes (ranks), one device each, that run
 * collectives and point-to-point transfers over device memory, enqueued on
 * streams of that device. Owned by the caller from comm_create until
 * comm_destroy. */
typedef struct keel_comm_t* keel_comm;

/* The reduction of comm_all_reduce and comm_reduce_scatter. AVG is the sum
 * divided by the number of ranks (integers round toward zero). */
typedef enum keel_reduce_op {
    KEEL_REDUCE_SUM = 0,
    KEEL_REDUCE_PROD = 1,
    KEEL_REDUCE_MAX = 2,
    KEEL_REDUCE_MIN = 3,
    KEEL_REDUCE_AVG = 4,
    KEEL_REDUCE_OP_FORCE_UINT32 = 0x7fffffff
} keel_reduce_op;

/* Called by a store's `get` with the value it found: `value` is valid only
 * during the call (copy it). */
typedef void (*keel_comm_store_receive_fn)(void* sink, const void* value, uint64_t size);

/* The key-value store the ranks meet through, provided by the caller as
 * callbacks (a file store, Redis, a framework's own).
 * [comm.store-calls] since 1.4: the plugin calls them only during
 * comm_create, from the thread that called it. */
typedef struct keel_comm_store {
    size_t struct_size;
    void* context; /* passed back to both callbacks */
    /* Sets `key` to the `size` bytes at `value` (copied before return). A
     * key is set once; setting it again may fail (FAILED_PRECONDITION). */
    keel_error* (*set)(void* context, const char* key, const void* value, uint64_t size);
    /* Waits up to `timeout_ms` for `key`; when it is there, calls
     * receive(sink, value, size) once, then returns NULL. A key not set in
     * time is an error (UNAVAILABLE) and `receive` is not called. */
    keel_error* (*get)(void* context, const char* key, uint64_t timeout_ms,
                       keel_comm_store_receive_fn receive, void* sink);
} keel_comm_store;
#define KEEL_COMM_STORE_STRUCT_SIZE KEEL_STRUCT_SIZE(keel_comm_store, get)

/* What comm_create reads (during the call only; nothing is kept). */
typedef struct keel_comm_config {
    size_t struct_size;
    int32_t rank;           /* 0 <= rank < size */
    int32_t size;           /* >= 1 */
    /* Bound on every wait: meeting the peers at create, and each operation
     * once its stream reached it. > 0. */
    uint64_t timeout_ms;
    /* NUL-terminated, not empty.
     * [comm.key-prefix] since 1.4: unique per communicator on `store`; every
     * key the plugin sets or gets starts with it followed by '/'. */
    const char* key_prefix;
    const keel_comm_store* store;
} keel_comm_config;
#define KEEL_COMM_CONFIG_STRUCT_SIZE KEEL_STRUCT_SIZE(keel_comm_config, store)

typedef enum keel_p2p_kind {
    KEEL_P2P_SEND = 0,
    KEEL_P2P_RECV = 1,
    KEEL_P2P_KIND_FORCE_UINT32 = 0x7fffffff
} keel_p2p_kind;

/* One send or receive of comm_send_recv_sized (1.5) and comm_send_recv
 * (1.4).
 * [comm.p2p-op-grows] since 1.5: it may grow: fields are appended, each with
 * a zero value that means what the struct meant without it, and the caller
 * passes the size it was built with (comm_send_recv_sized's op_size), which
 * is also each entry's struct_size. */
typedef struct keel_p2p_op {
    size_t struct_size;
    keel_p2p_kind kind;
    int32_t peer;            /* another rank of the communicator */
    keel_device_addr addr;   /* device memory of the communicator's device */
    uint64_t size;           /* bytes; the matching receive has the same size */
} keel_p2p_op;
#define KEEL_P2P_OP_STRUCT_SIZE KEEL_STRUCT_SIZE(keel_p2p_op, size)
/* keel_p2p_op as 1.4 and 1.5 define it: the least op_size a plugin accepts. */
#define KEEL_P2P_OP_STRUCT_SIZE_1_4 KEEL_STRUCT_SIZE(keel_p2p_op, size)

/* ======================================================================== */
/* Memory and events shared between processes (ABI 1.6)                     */
/* ======================================================================== */

/* What a keel_ipc_handle names. */
typedef enum keel_ipc_handle_kind {
    KEEL_IPC_HANDLE_NONE = 0,
    KEEL_IPC_HANDLE_MEMORY = 1,  /* an allocation, from ipc_memory_export */
    KEEL_IPC_HANDLE_EVENT = 2,   /* an event, from ipc_event_export */
    KEEL_IPC_HANDLE_KIND_FORCE_UINT32 = 0x7fffffff
} keel_ipc_handle_kind;

/* Room for a driver's opaque handle (a cudaIpcMemHandle_t is 64 bytes, a
 * ze_ipc_mem_handle_t 64). */
#define KEEL_IPC_HANDLE_MAX_BYTES 64u

/* An exported allocation or event as it travels to another process: a file
 * descriptor, where the platform shares memory through one (sent with
 * SCM_RIGHTS over a Unix socket: its number means nothing elsewhere), and
 * opaque bytes the exporting plugin defines (sent as they are). The
 * receiving process rebuilds the struct with ITS descriptor number in `fd`.
 *
 * [ipc.handle-ownership] since 1.6: `fd` of an exported handle is the
 * caller's (close it once sent, or once no longer needed); import reads
 * `fd` and `bytes` during the call only and never takes, closes or keeps
 * the caller's descriptor (a plugin that needs it dups it). */
typedef struct keel_ipc_handle {
    size_t struct_size;          /* [in] set by the caller */
    keel_ipc_handle_kind kind;
    int32_t fd;                  /* a descriptor, or -1 for none */
    uint64_t size;               /* memory: bytes of the allocation; event: 0 */
    uint32_t byte_count;         /* bytes of `bytes` in use, <= KEEL_IPC_HANDLE_MAX_BYTES */
    uint32_t reserved;           /* 0 */
    uint8_t bytes[KEEL_IPC_HANDLE_MAX_BYTES];
} keel_ipc_handle;
#define KEEL_IPC_HANDLE_STRUCT_SIZE KEEL_STRUCT_SIZE(keel_ipc_handle, bytes)

/* ======================================================================== */
/* The plugin table                                                         */
/* ======================================================================== */

/*
 * The table a plugin implements. APPEND-ONLY: add new entries at the end,
 * bump KEEL_ABI_VERSION_MINOR and note it in api/CHANGELOG.md.
 *
 * [table.required-entries] since 1.0: [required] entries lie within
 * struct_size and are non-NULL, or the runtime rejects the plugin.
 * [optional] entries may be NULL (or lie beyond struct_size): the
 * capability is absent and the runtime reports KEEL_STATUS_UNIMPLEMENTED.
 *
 * [table.lifetime] since 1.0: the table itself is owned by the plugin and
 * stays valid until plugin_shutdown returns.
 */
typedef struct keel_plugin_api {
    size_t struct_size;
    /* The ABI version the plugin was built against. */
    uint32_t abi_major;
    uint32_t abi_minor;

    /* ---- plugin ---------------------------------------------------- */

    /* [required] Describes the plugin.
     * [plugin.info] since 1.0: `out->struct_size` is set by the caller; the
     * plugin writes only the fields that fit. */
    keel_error* (*plugin_info)(keel_plugin_info* out);

    /* [required] Releases every plugin resource.
     * [plugin.shutdown] since 1.0: called once, last, after the caller
     * destroyed every stream, event, allocation (device and host_alloc) and
     * error it got from the plugin, and from 1.4 every communicator. No
     * entry is called during or after it (not thread-safe with other
     * entries). When it returns, no plugin thread runs code of the library
     * any more and no host function or store callback is called again:
     * the runtime unloads the library next. */
    void (*plugin_shutdown)(void);

    /* ---- devices --------------------------------------------------- */

    /* [required] Number of devices.
     * [device.count] since 1.0: 0 is valid (no driver, no hardware):
     * plugin_info's `status` then says why. */
    keel_error* (*device_count)(uint32_t* out_count);

    /* [required] The device at `index` < device_count (past it:
     * [edge.device-get-past-end]). */
    keel_error* (*device_get)(uint32_t index, keel_device* out_device);

    /* [required] Properties.
     * [device.properties] since 1.0: `out->struct_size` set by the caller,
     * the plugin writes only the fields that fit; name and vendor are
     * NUL-terminated and not empty, alloc_alignment is a power of two. */
    keel_error* (*device_properties)(keel_device device, keel_device_properties* out);

    /* ---- streams --------------------------------------------------- */

    /* [required] Creates a stream.
     * [stream.create] since 1.0: `flags` must be 0 in this version. */
    keel_error* (*stream_create)(keel_device device, uint32_t flags, keel_stream* out_stream);

    /* [required] Releases a stream.
     * [stream.destroy] since 1.0: waits for the stream's enqueued work, then
     * releases it. Returns the stream's sticky error, if any; the stream is
     * released either way. NULL is an error. */
    keel_error* (*stream_destroy)(keel_stream stream);

    /* [required]
     * [stream.synchronize] since 1.0: blocks the calling host thread until
     * all work enqueued on the stream before this call has completed. */
    keel_error* (*stream_synchronize)(keel_stream stream);

    /* [required]
     * [stream.query] since 1.0: non-blocking: *out_done = 1 when all
     * enqueued work has completed, 0 otherwise. */
    keel_error* (*stream_query)(keel_stream stream, int32_t* out_done);

    /* [required]
     * [stream.wait-event] since 1.0: orders all work enqueued on `stream`
     * after this call behind the event's most recent record (a fence). The
     * host does not block. An event never recorded is already complete.
     * `event` may belong to another stream of the same device (1.6: or of
     * another device of this plugin, where both set
     * KEEL_DEVICE_CAP_PEER_EVENT_WAIT). */
    keel_error* (*stream_wait_event)(keel_stream stream, keel_event event);

    /* [required]
     * [stream.host-func] since 1.0: enqueues `fn(user_data, status)`, run
     * exactly once, when the stream reaches it (see keel_host_fn); it never
     * runs inside this call. */
    keel_error* (*stream_enqueue_host_func)(keel_stream stream, keel_host_fn fn,
                                            void* user_data);

    /* ---- events ---------------------------------------------------- */

    /* [required] Creates an event; `flags` are keel_event_flags. */
    keel_error* (*event_create)(keel_device device, uint32_t flags, keel_event* out_event);

    /* [required] Releases an event.
     * [event.destroy-pending] since 1.0: a pending record still completes
     * harmlessly; waits already enqueued on it stay valid. */
    keel_error* (*event_destroy)(keel_event event);

    /* [required]
     * [event.record] since 1.0: captures the stream's work enqueued so far:
     * the event completes when the stream reaches this point. Re-recording
     * replaces the captured point for later queries and waits. */
    keel_error* (*event_record)(keel_event event, keel_stream stream);

    /* [required]
     * [event.query] since 1.0: non-blocking: *out_done = 1 when the most
     * recent record has completed (or the event was never recorded). */
    keel_error* (*event_query)(keel_event event, int32_t* out_done);

    /* [required]
     * [event.synchronize] since 1.0: blocks the calling host thread until
     * the most recent record has completed. */
    keel_error* (*event_synchronize)(keel_event event);

    /* ---- memory ---------------------------------------------------- */

    /* [required]
     * [memory.alloc] since 1.0: allocates `size` > 0 bytes of device memory
     * (0 is INVALID_ARGUMENT), aligned to properties.alloc_alignment. Owned
     * by the caller until device_free. KEEL_STATUS_OUT_OF_MEMORY when it
     * does not fit, never an allocation smaller than asked. Synchronous. */
    keel_error* (*device_alloc)(keel_device device, uint64_t size, keel_device_addr* out_addr);

    /* [required] Frees an allocation returned by device_alloc (a second
     * free: [edge.second-free]).
     * [memory.free] since 1.0: the caller guarantees no enqueued operation
     * still uses it (the runtime's caching allocator provides that
     * guarantee over streams, also for work of a stream that was destroyed
     * or failed). */
    keel_error* (*device_free)(keel_device device, keel_device_addr addr);

    /* [required] Async copy host -> device.
     * [copy.h2d-source] since 1.0: `src` must stay valid and unchanged until
     * the copy executes (it is read then, not at enqueue). `src` may be any
     * host memory: from host_alloc (pinned, the fast path) or ordinary
     * pageable memory, which the plugin must handle without blocking the
     * enqueue (e.g. through its own pinned staging, filled when the stream
     * reaches the copy).
     *
     * Who stages pageable memory: the plugin, when the copy executes,
     * because only it knows whether its device can reach pageable memory
     * (the CPU plugin copies directly; CUDA and Level Zero stage through
     * pinned blocks). The runtime hands pageable memory straight to this
     * entry (a vector moved into a copy) and to memcpy_d2h (a host
     * destination).
     * [copy.borrowed-container] since 1.0: the one exception is a borrowed
     * container, which the runtime promises to have read before its call
     * returns, a promise this entry cannot make: the runtime copies it into
     * pinned memory from host_alloc itself. keel's plugins and the runtime use one
     * engine for this, keel::staging (pinned block cache, host copy
     * threads, and the execution-time pipeline PageableStaging).
     *
     * A plugin that cannot stage (an out-of-tree plugin has only this
     * header) sets KEEL_DEVICE_CAP_PINNED_COPIES_ONLY (since 1.3, see
     * [cap.pinned-copies-only]): the runtime then
     * passes memcpy_h2d/memcpy_d2h only memory from the device's host_alloc,
     * and stages pageable memory itself, when the copy executes, through
     * the same engine (host functions on the stream fill and drain pinned
     * blocks).
     *
     * [copy.staging-full] since 1.0: a plugin's staging memory is bounded:
     * while copies in flight hold all of it, the entry may return
     * KEEL_STATUS_OUT_OF_MEMORY and enqueue
     * nothing (never a path that reads `src` at enqueue or waits for the
     * stream). The runtime then waits for its stream and retries once, for
     * a plugin of any minor. */
    keel_error* (*memcpy_h2d)(keel_stream stream, keel_device_addr dst, const void* src,
                              uint64_t size);

    /* [required] Async copy device -> host.
     * [copy.d2h-destination] since 1.0: `dst` is written when the copy
     * executes, not at enqueue; it must stay valid until then. Pinned or
     * pageable host memory, as for memcpy_h2d: a pageable destination must
     * not make the enqueue wait for the copy; OUT_OF_MEMORY as for
     * memcpy_h2d. */
    keel_error* (*memcpy_d2h)(keel_stream stream, void* dst, keel_device_addr src,
                              uint64_t size);

    /* [required]
     * [copy.d2d] since 1.0: async copy device -> device on the same device.
     * Ranges must not overlap. */
    keel_error* (*memcpy_d2d)(keel_stream stream, keel_device_addr dst, keel_device_addr src,
                              uint64_t size);

    /* [required]
     * [copy.memset] since 1.0: async fill of `size` bytes with the byte
     * `value`. */
    keel_error* (*memset_d8)(keel_stream stream, keel_device_addr dst, uint8_t value,
                             uint64_t size);

    /* ---- optional entries (may be NULL) ------------------------------ */

    /* [optional]
     * [memory.info] since 1.0: free and total device memory in bytes. */
    keel_error* (*device_memory_info)(keel_device device, uint64_t* out_free,
                                      uint64_t* out_total);

    /* [optional]
     * [memory.host-alloc] since 1.0: allocates `size` bytes of pinned
     * (page-locked) host memory usable by async copies of any stream of
     * `device`. Owned by the caller until host_free. Without it, the
     * runtime stages through ordinary host memory. */
    keel_error* (*host_alloc)(keel_device device, uint64_t size, void** out_ptr);

    /* [optional] Frees memory from host_alloc; NULL required iff host_alloc is. */
    keel_error* (*host_free)(keel_device device, void* ptr);

    /* [optional] (not complete or no timing:
     * [edge.elapsed-time-incomplete])
     * [event.elapsed-time] since 1.0: milliseconds between two completed
     * events that were both created with KEEL_EVENT_TIMING and recorded on
     * the same device. */
    keel_error* (*event_elapsed_time)(keel_event start, keel_event end, float* out_ms);

    /* [optional]
     * [kernel.get] since 1.0: looks up a kernel by name.
     * KEEL_STATUS_NOT_FOUND if this device has no such kernel. */
    keel_error* (*kernel_get)(keel_device device, const char* name, keel_kernel* out_kernel);

    /* [optional] Enqueues a kernel.
     * [kernel.launch-validates] since 1.0: the plugin validates the argument
     * list (count, kinds, dtypes, buffer sizes against shapes) and returns
     * KEEL_STATUS_INVALID_ARGUMENT, naming the argument, before enqueuing
     * anything. `launch` and the memory it points to (int arrays included)
     * are read before this call returns. */
    keel_error* (*kernel_launch)(keel_stream stream, keel_kernel kernel,
                                 const keel_launch_args* launch);

    /* [optional]
     * [copy.inline] since 1.0: async copy of `size` <= KEEL_INLINE_COPY_MAX
     * bytes host -> device whose source is captured before this call
     * returns, so the caller may reuse `src` at once (scalars, shapes,
     * without staging). */
    keel_error* (*memcpy_h2d_inline)(keel_stream stream, keel_device_addr dst,
                                     const void* src, uint64_t size);

    /* ---- ABI 1.1 ---------------------------------------------------- */

    /* [optional, 1.1]
     * [native.device-handle] since 1.1: the driver's device behind `device`
     * (kind and value; the plugin writes the fields that fit
     * `out->struct_size`). Owned by the plugin and valid until
     * plugin_shutdown: the caller must not release it. Absent (or
     * UNIMPLEMENTED) where no driver object exists, as on the CPU plugin. */
    keel_error* (*device_native_handle)(keel_device device, keel_native_handle* out);

    /* [optional, 1.1]
     * [native.stream-handle] since 1.1: the driver's queue behind `stream`
     * (e.g. the cudaStream_t). Owned by the plugin and valid until
     * stream_destroy: the caller must not destroy it. Work the caller submits
     * to it is ordered with the keel work of the stream in submission order
     * (both ways), like work of the stream itself; it must not be used from a
     * host function. */
    keel_error* (*stream_native_handle)(keel_stream stream, keel_native_handle* out);

    /* ---- ABI 1.2 ---------------------------------------------------- */

    /* [optional, 1.2]
     * [staging.stats] since 1.2: what the plugin's staging of pageable host
     * memory did on `device` (see keel_pageable_staging_stats); the plugin
     * writes the fields that fit `out->struct_size`. Absent where pageable
     * memory is copied directly, as on the CPU plugin. Any thread. */
    keel_error* (*device_pageable_staging_stats)(keel_device device, keel_pageable_staging_stats* out);

    /* ---- ABI 1.3: rules of minor 1.3 ------------------------------------
     * Rules that bind a plugin from the minor it declares: keel-cts holds a
     * plugin of an older minor only to the rules of its own, and the runtime
     * expects no more of it (api/CHANGELOG.md says what an older plugin
     * gets).
     *   - [staging.blocks-back] since 1.3: a copy that a plugin stages
     *     through pinned blocks gives them back before its stream passes the
     *     copy. Once stream_synchronize of that stream returned (or an event
     *     recorded after the copy completed), lent_bytes of
     *     device_pageable_staging_stats no longer counts the copy. (1.2: the
     *     blocks may come back a little after the stream passed the copy.)
     */

    /* ---- ABI 1.3: error propagation ---- */
    /* Rules only, no entry. A plugin declaring minor 3 or later keeps them:
     *  - [error-propagation.across-waits] since 1.3: errors travel with the
     *    work that depends on them: a stream that
     *    waits (stream_wait_event) on an event recorded after a failure of
     *    another stream fails too, with the original error's status and its
     *    message quoted in its own; also when the failure happened before
     *    the wait was enqueued.
     *  - [error-propagation.failed-stream-orders-waits] since 1.3: a failed
     *    stream still orders its waits: work enqueued on it after a
     *    stream_wait_event (host functions, events recorded later) completes
     *    only after the waited-for point, as on a healthy stream.
     *  - [error-propagation.sync-waits-for-work] since 1.3: no
     *    synchronisation returns before the work enqueued before it has
     *    stopped touching memory, on a failed stream too: stream_synchronize,
     *    event_synchronize and stream_destroy of a failed stream wait for
     *    that work (in bounded time: skipped work counts as stopped), and
     *    event_query answers "not done" while it runs.
     *  - [error-propagation.taint-from-failing-point] since 1.3: a failure
     *    taints the work from its failing point on: an enqueue that
     *    fails leaves the work accepted before it intact (its events and
     *    host functions see no error), and every event recorded after the
     *    failing point reports the error, never success over data that was
     *    not produced. */

    /* ---- ABI 1.3: checker annotations ---------------------------------- */

    /* [optional, 1.3]
     * [checker.annotate-range] since 1.3: tells a checking plugin what a
     * caching allocator on top of it knows and the plugin cannot see (the CPU
     * plugin's checker turns the lifetime bugs it shows into failures):
     *   KEEL_RANGE_RELEASED: the buffer that used [addr, addr + size) was
     *     freed and the range went back to the allocator's cache; an access
     *     enqueued to it from now on is a use after free, until
     *     KEEL_RANGE_ACQUIRED. Releasing a released byte again is a double
     *     free (KEEL_STATUS_FAILED_PRECONDITION).
     *   KEEL_RANGE_ACQUIRED: the allocator handed the range to a new owner
     *     whose work is enqueued on `stream`; an access of the new owner not
     *     ordered after the old owner's last use is a race.
     * The range lies inside a live device_alloc allocation of the stream's
     * device (else KEEL_STATUS_INVALID_ARGUMENT). Takes effect at the call;
     * enqueues nothing and never waits. Any thread. A plugin that checks
     * nothing leaves it absent (the runtime then tells nothing). */
    keel_error* (*stream_annotate_range)(keel_stream stream, keel_range_annotation what,
                                         keel_device_addr addr, uint64_t size);

    /* ---- ABI 1.4: communication ---------------------------------------
     * [optional, 1.4] A native engine for keel::Communicator (the CUDA
     * plugin over NCCL).
     * [comm.set] since 1.4: the eight comm_* entries are present as a set or
     * absent as a set (keel-cts checks it); without them, or for a plugin
     * declaring an older minor, the runtime communicates through its generic
     * path (Gloo over pinned staging), which needs nothing from a plugin.
     *
     * [comm.ownership] since 1.4: the keel_comm from comm_create is the
     * caller's until comm_destroy. Addresses are device memory of the
     * communicator's device; the caller keeps it allocated until the
     * operation completed on its stream (as for any enqueued work).
     *
     * [comm.threads] since 1.4: comm_create blocks its thread (below). Every
     * other comm_* entry may be called from any thread; enqueue calls on one
     * communicator are ordered in the order they return, and every rank must
     * enqueue the same operations in the same order (one order per
     * communicator, whatever the streams). comm_abort from any thread at any
     * time, also while another thread is in an enqueue call.
     *
     * [comm.first-operation-may-block] since 1.4: comm_create is collective
     * and blocks until every rank of `config` called it (at most
     * config->timeout_ms, else UNAVAILABLE). The operations are enqueue
     * entries: they return without waiting for the stream, except that the
     * FIRST operation of a communicator involving a given peer may block the
     * calling thread until that peer enqueues its matching operation (the
     * engine's connection set-up, as NCCL's lazy connections do), at most
     * config->timeout_ms. Later operations never wait for a peer.
     *
     * [comm.errors-at-call] since 1.4: errors at the call (nothing enqueued):
     * INVALID_ARGUMENT for a null handle or config, rank outside [0, size), a
     * key prefix that is empty, a peer or root outside the group, a send to
     * oneself, a dtype or reduction the engine cannot do, a stream of another
     * device; FAILED_PRECONDITION once the communicator was aborted or
     * failed.
     * [comm.unimplemented-on-every-rank] since 1.4: comm_create returns
     * UNIMPLEMENTED when the engine cannot serve this
     * group (its library is absent, two ranks share one device, a group
     * size it does not support): it then returns UNIMPLEMENTED on EVERY rank
     * of the group (the ranks agree through the store, under the key
     * prefix), so the runtime can fall back to its generic path with the
     * same ranks, store and key prefix; the message says why.
     *
     * [comm.errors-while-running] since 1.4: an operation that fails once its
     * stream reached it (a peer died or timed out past config->timeout_ms,
     * the engine failed, comm_abort) puts its stream in the sticky error
     * state (KEEL_STATUS_DEVICE_ERROR, or FAILED_PRECONDITION for an abort)
     * with a message naming the operation, the communicator's key prefix and
     * rank, and the peer where known; the communicator fails too (later
     * enqueues return that error). Never a silent hang: a wait is bounded by
     * the timeout.
     *
     * [comm.collectives] since 1.4: comm_all_reduce, comm_broadcast,
     * comm_all_gather and comm_reduce_scatter write what their entries below
     * say on every rank (for a group of one: out = in, in place or not).
     */

    /* [optional, 1.4] Creates this rank's communicator on `device`, meeting
     * the other ranks through config->store (see above: collective, blocks).
     * Reads `config` and the store only during the call. */
    keel_error* (*comm_create)(keel_device device, const keel_comm_config* config, keel_comm* out_comm);

    /* [optional, 1.4] Waits for the operations enqueued on the
     * communicator (each bounded by the timeout), then releases it. Returns
     * its error, if it failed; released either way. Not concurrent with
     * enqueues on the same communicator. */
    keel_error* (*comm_destroy)(keel_comm comm);

    /* [optional, 1.4]
     * [comm.abort] since 1.4: fails the communicator: operations in flight
     * end and fail their streams (FAILED_PRECONDITION "aborted"), later
     * enqueues fail. Any thread, never blocks for a peer, idempotent. The
     * caller still calls comm_destroy. */
    keel_error* (*comm_abort)(keel_comm comm);

    /* [optional, 1.4] out[i] = op over ranks of in[i], `count` elements of
     * `dtype` (in == out: in place). */
    keel_error* (*comm_all_reduce)(keel_comm comm, keel_stream stream, keel_device_addr in,
                                   keel_device_addr out, uint64_t count, keel_dtype dtype,
                                   keel_reduce_op op);

    /* [optional, 1.4] out = root's `bytes` at in, on every rank (in is read
     * on root only; in == out allowed). */
    keel_error* (*comm_broadcast)(keel_comm comm, keel_stream stream, keel_device_addr in,
                                  keel_device_addr out, uint64_t bytes, int32_t root);

    /* [optional, 1.4] out = the `bytes_per_rank` at in of ranks 0..size-1,
     * one after another (out holds size * bytes_per_rank). */
    keel_error* (*comm_all_gather)(keel_comm comm, keel_stream stream, keel_device_addr in,
                                   keel_device_addr out, uint64_t bytes_per_rank);

    /* [optional, 1.4] out = part `rank` (count_per_rank elements) of op
     * over ranks of in (size * count_per_rank elements). */
    keel_error* (*comm_reduce_scatter)(keel_comm comm, keel_stream stream, keel_device_addr in,
                                       keel_device_addr out, uint64_t count_per_rank,
                                       keel_dtype dtype, keel_reduce_op op);

    /* [optional, 1.4] `count` sends and receives (each with its own
     * struct_size) that progress together, as one NCCL group; per pair of
     * ranks, messages match in the order they were enqueued. `ops` is read
     * before return. count == 0 enqueues nothing. */
    keel_error* (*comm_send_recv)(keel_comm comm, keel_stream stream, const keel_p2p_op* ops,
                                  uint32_t count);

    /* ---- ABI 1.4: host functions that fail their stream ---- */

    /* [optional, 1.4]
     * [host-func.fallible] since 1.4: enqueues `fn(user_data, status)` (see
     * keel_fallible_host_fn) with the rules of stream_enqueue_host_func: it
     * never waits, fn runs exactly once on a plugin thread and must not call
     * this table, and a stream already known to be in error returns that
     * error and enqueues nothing. When fn returns an error, the stream fails
     * at that point as if an operation of the stream had failed there, with
     * the error's code and its message (which the plugin may prefix with
     * where it comes from):
     *   - the rules of "Asynchronous errors" and 1.3's error propagation hold
     *     from that point: stream_synchronize, stream_query, events recorded
     *     after the host function (their query and synchronize, and streams
     *     that wait on them) and later enqueues report the error; work
     *     accepted before it, and events recorded before it, are untouched;
     *   - the stream's later operations are skipped (host functions still
     *     run, with the error as their status). A plugin whose device cannot
     *     skip work it already submitted behind the host function lets that
     *     work run over unspecified data; it reports the error at every
     *     point above all the same, so no synchronisation, query or event
     *     after the failure ever reports success.
     * Absent: a host function cannot fail its stream (the runtime says so
     * to its caller, see Stream::host_funcs_can_fail). */
    keel_error* (*stream_enqueue_fallible_host_func)(keel_stream stream, keel_fallible_host_fn fn,
                                                     void* user_data);
    /* ---- end of ABI 1.4: host functions that fail their stream ---- */

    /* ---- ABI 1.5: point-to-point with the element size ---------------- */

    /* [optional, 1.5]
     * [comm.send-recv-sized-in-set] since 1.5: for a plugin declaring 1.5 or
     * later, part of the communication set: present exactly when the 1.4
     * comm_* entries are.
     * [comm.send-recv-sized] since 1.5: comm_send_recv over `count` entries
     * of `op_size` bytes each, `ops`
     * pointing at the first (the caller's keel_p2p_op, which may be longer
     * than the plugin's): entry i is at (const char*)ops + i * op_size, and
     * its struct_size equals op_size. op_size is at least
     * KEEL_P2P_OP_STRUCT_SIZE_1_4 (else INVALID_ARGUMENT). The plugin reads
     * the fields it knows; bytes beyond them that are not all zero ask for
     * something it cannot do: UNIMPLEMENTED, nothing enqueued (never
     * silently ignored; checked before the entries' other fields). Otherwise the rules of comm_send_recv. The runtime
     * calls this entry for a plugin declaring 1.5 and comm_send_recv for a
     * 1.4 plugin. */
    keel_error* (*comm_send_recv_sized)(keel_comm comm, keel_stream stream, const keel_p2p_op* ops,
                                        uint32_t count, size_t op_size);
    /* ---- end of ABI 1.5 ---- */

    /* ---- ABI 1.6: plugin options ---- */

    /* [optional, 1.6]
     * [options.info-entry] since 1.6: writes what the plugin says of its
     * setting `index` (0 <= index < the number of settings it takes as
     * options; past the last: KEEL_STATUS_NOT_FOUND), the fields that fit
     * `out->struct_size`. Every key it accepts at keel_plugin_init is
     * described, and only those. Absent: the plugin takes no options. Any
     * thread. */
    keel_error* (*plugin_option_info)(uint32_t index, keel_option_info* out);
    /* ---- end of ABI 1.6: plugin options ---- */

    /* ---- ABI 1.6: memory and events shared between processes ----------
     * [optional, 1.6] Device memory and events another process can use, as
     * CUDA's IPC handles and Level Zero's IPC handles offer: one process
     * exports an allocation (or an event) as a keel_ipc_handle, sends it
     * (keel::ipc sends a descriptor with SCM_RIGHTS over a Unix socket), and
     * another process imports it on a device of the same plugin as a device
     * address (or an event) of its own.
     *
     * [ipc.memory-set] since 1.6: ipc_memory_alloc, ipc_memory_export,
     * ipc_memory_import and ipc_memory_close are present as a set, exactly
     * when a device sets KEEL_DEVICE_CAP_IPC_MEMORY (keel-cts checks it). A
     * plugin of an older minor has none of them: the runtime answers
     * UNIMPLEMENTED.
     *
     * [ipc.event-set] since 1.6: ipc_event_export and ipc_event_import are
     * present as a set, exactly when a device sets KEEL_DEVICE_CAP_IPC_EVENTS,
     * which also makes event_create accept KEEL_EVENT_INTERPROCESS (keel-cts
     * checks it). A plugin of an older minor has neither.
     *
     * [ipc.memory-lifetime] since 1.6: an importer's address stays valid,
     * with the allocation's bytes, until that importer closes it
     * (ipc_memory_close), also after the exporter freed the allocation or
     * exited: the memory lives until the exporter freed it AND every
     * importer closed it. A device_free of exported memory while an
     * importer still has it open is a caller bug all the same (the exporter
     * may not reuse what it shared); a checking plugin reports it where it
     * can tell (the CPU plugin's checker refuses the free).
     *
     * [ipc.memory-ordering] since 1.6: the processes order their work on
     * shared memory through an exported event: the exporter records it
     * after its writes, the importer's stream waits for it
     * (stream_wait_event) before reading. Memory is not ordered by the
     * handle's arrival: a read not ordered after the exporter's writes by
     * the shared event (or by the exporter's host having waited for them
     * before it exported) is a race, which a checking plugin reports where
     * it can tell.
     *
     * [ipc.errors] since 1.6: errors at the call: INVALID_ARGUMENT for a
     * null handle or output, an
     * address that is not the base of a live allocation of ipc_memory_alloc
     * (export), a handle of the wrong kind, of another plugin or malformed
     * (import), an imported address given to device_free or a local one to
     * ipc_memory_close; UNAVAILABLE when the exporter's allocation or event
     * is gone for good (its process exited before the import, where the
     * plugin can tell). A plugin may refuse to import a handle in the
     * process that exported it (FAILED_PRECONDITION, as CUDA does).
     *
     * Threads: any thread, as every entry. */

    /* [optional, 1.6] Allocates `size` > 0 bytes of device memory that
     * ipc_memory_export can export, with device_alloc's rules (alignment,
     * OUT_OF_MEMORY); the caller frees it with device_free. Where every
     * allocation is exportable (CUDA, Level Zero) it is device_alloc. */
    keel_error* (*ipc_memory_alloc)(keel_device device, uint64_t size, keel_device_addr* out_addr);

    /* [optional, 1.6] Exports the allocation whose BASE is `addr` (from
     * ipc_memory_alloc of `device`): writes the fields of `out` that fit
     * out->struct_size (kind MEMORY, size, fd or -1, bytes). Each call
     * makes a new handle (a new descriptor, the caller's). Synchronous;
     * enqueues nothing: the bytes are those of the allocation whenever the
     * importer reads them (see [ipc.memory-ordering]). */
    keel_error* (*ipc_memory_export)(keel_device device, keel_device_addr addr, keel_ipc_handle* out);

    /* [optional, 1.6] Opens `handle` (from ipc_memory_export of this
     * plugin in another process) on `device`: *out_addr is the base of the
     * whole allocation (handle->size bytes) in this process, usable by every
     * copy, memset and kernel of `device` like its own memory, until
     * ipc_memory_close. Each import is opened, and closed, on its own. */
    keel_error* (*ipc_memory_import)(keel_device device, const keel_ipc_handle* handle,
                                     keel_device_addr* out_addr);

    /* [optional, 1.6] Closes an address from ipc_memory_import. The caller
     * guarantees no enqueued operation still uses it (as for device_free);
     * a use enqueued after the close is a use after free. */
    keel_error* (*ipc_memory_close)(keel_device device, keel_device_addr addr);

    /* [optional, 1.6] Exports an event created with KEEL_EVENT_INTERPROCESS
     * (else INVALID_ARGUMENT): writes `out` as ipc_memory_export does (kind
     * EVENT). The exporter keeps recording it as any event. */
    keel_error* (*ipc_event_export)(keel_event event, keel_ipc_handle* out);

    /* [optional, 1.6] Opens `handle` (from ipc_event_export in another
     * process) as an event of `device`, the caller's until event_destroy.
     * [ipc.event-wait] since 1.6: stream_wait_event, event_query and
     * event_synchronize on it observe the exporter's most recent record
     * as the exporter had made it when the call was made (a record not yet
     * made is not waited for), and the 1.3 error propagation holds across
     * the processes: a record after a failure fails the waiting stream,
     * the query and the synchronize with the exporter's error in the
     * message. A wait for an exporter that exited before its record
     * completed fails with UNAVAILABLE, in bounded time, where the plugin
     * can tell. event_record and event_elapsed_time on an imported event
     * are INVALID_ARGUMENT: only the exporter records it. */
    keel_error* (*ipc_event_import)(keel_device device, const keel_ipc_handle* handle,
                                    keel_event* out_event);
    /* ---- end of ABI 1.6: memory and events shared between processes ---- */

    /* ---- ABI 1.6: several devices ---------------------------------------
     * Copies between the memory of two devices of this plugin, and waits of
     * a stream of one device for an event of another. Each device says what
     * it can do with a capability bit (KEEL_DEVICE_CAP_PEER_COPY,
     * KEEL_DEVICE_CAP_PEER_EVENT_WAIT); the runtime does the rest itself
     * (copies staged through pinned host memory, waits bridged by host
     * functions), also between devices of two plugins.
     *
     * [multidev.foreign-memory] since 1.6: every entry but memcpy_peer
     * takes device memory of the stream's (or the given) device only:
     * memory of another device of this plugin is KEEL_STATUS_OUT_OF_RANGE
     * (copies, memset) or KEEL_STATUS_INVALID_ARGUMENT (kernel arguments)
     * where the plugin can tell, at the call or when the work executes,
     * never a silent access of the other device's memory.
     */

    /* [optional, 1.6; present iff some device sets KEEL_DEVICE_CAP_PEER_COPY]
     * [multidev.peer-query] since 1.6: *out_can = 1 when memcpy_peer copies
     * between memory of `device` and memory of `peer` (both devices of this
     * plugin, in either direction, on a stream of either), else 0. The
     * answer never changes while the plugin is loaded. `device` == `peer`
     * answers 0 (use memcpy_d2d). Any thread; never blocks for the device. */
    keel_error* (*device_can_copy_peer)(keel_device device, keel_device peer, int32_t* out_can);

    /* [optional, 1.6; present iff device_can_copy_peer is]
     * [multidev.peer-copy] since 1.6: async copy of `size` bytes from `src`,
     * memory of `src_device`, to `dst`, memory of `dst_device`, enqueued on
     * `stream`, a stream of one of the two devices, for a pair that
     * device_can_copy_peer accepts. The rules of memcpy_d2d otherwise: in
     * stream order on `stream`, never blocking the enqueue; 0 bytes
     * enqueue nothing. The caller orders the other device's earlier and
     * later uses of its memory with events (the copy is the stream's
     * work). Errors at the call: INVALID_ARGUMENT when `stream` is of
     * neither device, or for a pair the plugin does not accept
     * (device_can_copy_peer answers 0), or dst_device == src_device;
     * OUT_OF_RANGE where the plugin can tell that an address is not memory
     * of the device it is given with. */
    keel_error* (*memcpy_peer)(keel_stream stream, keel_device dst_device, keel_device_addr dst,
                               keel_device src_device, keel_device_addr src, uint64_t size);
    /* ---- end of ABI 1.6: several devices ---- */

    /* ---- append new entries above this line's successor, never above -- */
} keel_plugin_api;
#define KEEL_PLUGIN_API_STRUCT_SIZE KEEL_STRUCT_SIZE(keel_plugin_api, memcpy_peer)
/* The table's size at each minor.
 * [table.size-of-minor] since 1.0: a plugin declaring minor N writes a
 * struct_size of at most KEEL_PLUGIN_API_STRUCT_SIZE_1_N (new entries come
 * with a new minor) and at least the end of memset_d8, its last required
 * entry; entries between its struct_size and that minor's size are absent,
 * as the runtime reads them (keel-cts checks both bounds). A plugin of a
 * minor newer than the runtime's writes at least the runtime's size. */
#define KEEL_PLUGIN_API_STRUCT_SIZE_1_0 KEEL_STRUCT_SIZE(keel_plugin_api, memcpy_h2d_inline)
#define KEEL_PLUGIN_API_STRUCT_SIZE_1_1 KEEL_STRUCT_SIZE(keel_plugin_api, stream_native_handle)
#define KEEL_PLUGIN_API_STRUCT_SIZE_1_2 KEEL_STRUCT_SIZE(keel_plugin_api, device_pageable_staging_stats)
#define KEEL_PLUGIN_API_STRUCT_SIZE_1_3 KEEL_STRUCT_SIZE(keel_plugin_api, stream_annotate_range)
#define KEEL_PLUGIN_API_STRUCT_SIZE_1_4 KEEL_STRUCT_SIZE(keel_plugin_api, stream_enqueue_fallible_host_func)
#define KEEL_PLUGIN_API_STRUCT_SIZE_1_5 KEEL_STRUCT_SIZE(keel_plugin_api, comm_send_recv_sized)
#define KEEL_PLUGIN_API_STRUCT_SIZE_1_6 KEEL_STRUCT_SIZE(keel_plugin_api, memcpy_peer)

/* Largest copy memcpy_h2d_inline accepts. */
#define KEEL_INLINE_COPY_MAX 256u

/* Offset of an entry in the table: an entry is present iff
 * struct_size >= KEEL_API_ENTRY_END(entry) and the pointer is non-NULL. */
#define KEEL_API_ENTRY_END(entry) KEEL_STRUCT_SIZE(keel_plugin_api, entry)

/* ======================================================================== */
/* The entry symbol                                                         */
/* ======================================================================== */

#define KEEL_PLUGIN_ENTRY_NAME "keel_plugin_init"

/*
 * The one symbol a plugin exports:
 *
 *   KEEL_PLUGIN_EXPORT keel_error* keel_plugin_init(
 *       const keel_host_services* host, const keel_plugin_api** out_api);
 *
 * [plugin.init] since 1.0: the runtime offers its ABI version in `host`. A
 * plugin whose major differs refuses with KEEL_STATUS_VERSION_MISMATCH and a
 * message naming both versions. Otherwise it initialises itself and sets
 * *out_api to its table, whose abi_major/abi_minor/struct_size say what it
 * implements; the runtime checks the major again and reads only struct_size
 * bytes. Called once per load, from one thread. On error the runtime unloads
 * the library without calling plugin_shutdown.
 */
typedef keel_error* (*keel_plugin_entry_fn)(const keel_host_services* host,
                                            const keel_plugin_api** out_api);

/* ======================================================================== */
/* Layout checks: a field added in the middle breaks these.                 */
/* ======================================================================== */

/* Every data model: enums are 32-bit, and the structs made only of
 * size_t, 32-bit fields and pointers have these sizes (size_t and pointers
 * are the same width on every target keel supports). */
KEEL_STATIC_ASSERT(sizeof(keel_status) == 4, "enums are 32-bit");
KEEL_STATIC_ASSERT(sizeof(keel_dtype) == 4, "enums are 32-bit");
KEEL_STATIC_ASSERT(sizeof(keel_arg_kind) == 4, "enums are 32-bit");
KEEL_STATIC_ASSERT(sizeof(size_t) == sizeof(void*), "size_t is as wide as a pointer");
KEEL_STATIC_ASSERT(KEEL_ERROR_STRUCT_SIZE == 4 * sizeof(void*), "keel_error layout changed");
KEEL_STATIC_ASSERT(KEEL_HOST_SERVICES_STRUCT_SIZE_1_0 == 8 + 4 * sizeof(void*),
                   "keel_host_services layout changed");
KEEL_STATIC_ASSERT(KEEL_HOST_SERVICES_STRUCT_SIZE == 8 + 7 * sizeof(void*),
                   "keel_host_services layout changed");
KEEL_STATIC_ASSERT(KEEL_OPTION_STRUCT_SIZE == 3 * sizeof(void*), "keel_option layout changed");
KEEL_STATIC_ASSERT(sizeof(keel_option_source) == 4, "enums are 32-bit");
KEEL_STATIC_ASSERT(KEEL_PLUGIN_INFO_STRUCT_SIZE == 4 * sizeof(void*), "keel_plugin_info layout changed");
KEEL_STATIC_ASSERT(KEEL_LAUNCH_ARGS_STRUCT_SIZE == 4 * sizeof(void*), "keel_launch_args layout changed");
KEEL_STATIC_ASSERT(sizeof(keel_native_handle_kind) == 4, "enums are 32-bit");
KEEL_STATIC_ASSERT(sizeof(keel_range_annotation) == 4, "enums are 32-bit");
KEEL_STATIC_ASSERT(KEEL_PLUGIN_API_STRUCT_SIZE_1_0 == 8 + 30 * sizeof(void*),
                   "keel_plugin_api layout changed: entries are append-only");
KEEL_STATIC_ASSERT(KEEL_PLUGIN_API_STRUCT_SIZE_1_1 == 8 + 32 * sizeof(void*),
                   "keel_plugin_api layout changed: entries are append-only");
KEEL_STATIC_ASSERT(KEEL_PLUGIN_API_STRUCT_SIZE_1_2 == 8 + 33 * sizeof(void*),
                   "keel_plugin_api layout changed: entries are append-only");
KEEL_STATIC_ASSERT(KEEL_PLUGIN_API_STRUCT_SIZE_1_3 == 8 + 34 * sizeof(void*),
                   "keel_plugin_api layout changed: entries are append-only");
KEEL_STATIC_ASSERT(KEEL_PLUGIN_API_STRUCT_SIZE_1_4 == 8 + 43 * sizeof(void*),
                   "keel_plugin_api layout changed: entries are append-only");
KEEL_STATIC_ASSERT(KEEL_PLUGIN_API_STRUCT_SIZE_1_5 == 8 + 44 * sizeof(void*),
                   "keel_plugin_api layout changed: entries are append-only");
KEEL_STATIC_ASSERT(KEEL_PLUGIN_API_STRUCT_SIZE_1_6 == 8 + 53 * sizeof(void*),
                   "keel_plugin_api layout changed: entries are append-only");
KEEL_STATIC_ASSERT(sizeof(keel_ipc_handle_kind) == 4, "enums are 32-bit");
KEEL_STATIC_ASSERT(sizeof(keel_reduce_op) == 4, "enums are 32-bit");
KEEL_STATIC_ASSERT(sizeof(keel_p2p_kind) == 4, "enums are 32-bit");
KEEL_STATIC_ASSERT(KEEL_COMM_STORE_STRUCT_SIZE == 4 * sizeof(void*), "keel_comm_store layout changed");

/* LP64 (every 64-bit Linux and macOS target): the structs with 64-bit
 * fields, whose padding differs between 32-bit ABIs. Elsewhere they are not
 * pinned here; struct_size still lets both sides agree on what was written. */
#if defined(__LP64__) || defined(_LP64)
KEEL_STATIC_ASSERT(KEEL_ERROR_STRUCT_SIZE == 32, "keel_error layout changed");
KEEL_STATIC_ASSERT(KEEL_DEVICE_PROPERTIES_STRUCT_SIZE == 360,
                   "keel_device_properties layout changed");
KEEL_STATIC_ASSERT(KEEL_KERNEL_ARG_STRUCT_SIZE == 32, "keel_kernel_arg layout changed");
KEEL_STATIC_ASSERT(KEEL_NATIVE_HANDLE_STRUCT_SIZE == 24, "keel_native_handle layout changed");
KEEL_STATIC_ASSERT(KEEL_PAGEABLE_STAGING_STATS_STRUCT_SIZE == 88,
                   "keel_pageable_staging_stats layout changed");
KEEL_STATIC_ASSERT(KEEL_PLUGIN_API_STRUCT_SIZE_1_6 == 16 + 52 * sizeof(void*),
                   "keel_plugin_api layout changed: entries are append-only");
KEEL_STATIC_ASSERT(KEEL_IPC_HANDLE_STRUCT_SIZE == 96, "keel_ipc_handle layout changed");
KEEL_STATIC_ASSERT(KEEL_OPTION_INFO_STRUCT_SIZE == 56, "keel_option_info layout changed");
KEEL_STATIC_ASSERT(KEEL_COMM_CONFIG_STRUCT_SIZE == 40, "keel_comm_config layout changed");
KEEL_STATIC_ASSERT(KEEL_P2P_OP_STRUCT_SIZE == 32, "keel_p2p_op layout changed");
KEEL_STATIC_ASSERT(KEEL_P2P_OP_STRUCT_SIZE_1_4 == 32, "keel_p2p_op layout changed");
#endif

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* KEEL_KEEL_H */
