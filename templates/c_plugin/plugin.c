/*
 * A complete keel plugin in plain C99, built from the installed SDK alone
 * (keel.h). Start a new device here: rename DEVICE_TYPE and the plugin in
 * CMakeLists.txt (the file must be libkeel_<DEVICE_TYPE>.so), then replace
 * the host-memory "device" below with calls into your driver.
 *
 * What it shows (docs/kernels.md, installed as share/doc/keel/kernels.md has the rules it follows):
 *   - one exported symbol, keel_plugin_init, with version negotiation;
 *   - errors as caller-owned keel_error objects whose message names the entry;
 *   - streams as in-order queues run by a worker thread each: enqueue never
 *     waits for the device, synchronize/query/events/waits see the queue;
 *   - events that capture a stream point, timing, cross-stream waits;
 *   - the optional entries device_memory_info, event_elapsed_time, host_alloc
 *     and the kernels fill and axpy, with argument validation before enqueue;
 *   - (keel.h 1.3) a device whose copies take only pinned memory, for which
 *     the runtime stages pageable memory (see "pinned host memory" below).
 * The "device" is host memory (so it is HOST_ADDRESSABLE).
 *
 * Threads: every entry may be called from any thread. Each stream has a
 * lock for its queue; allocations have one lock; every event record has
 * its state under g_records (one lock and one condition variable for all of
 * them: simple, and enough for a template).
 */
#define _POSIX_C_SOURCE 200809L
#include <keel/keel.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEVICE_TYPE "example"
#define PLUGIN_VERSION "0.1.0"
#define TOTAL_MEMORY (256ull << 20)
#define ALIGNMENT 256u

/* ---- errors ------------------------------------------------------------ */

typedef struct message_error {
    keel_error base;
    char text[]; /* the message, NUL-terminated */
} message_error;

static void destroy_message_error(keel_error* e) { free(e); }
static void destroy_static_error(keel_error* e) { (void)e; }

/* An error "[example <entry>] <message>", owned by the caller. */
static keel_error* fail(keel_status code, const char* entry, const char* format, ...) {
    static keel_error out_of_memory = {sizeof(keel_error), KEEL_STATUS_OUT_OF_MEMORY,
                                       "[" DEVICE_TYPE "] out of host memory while reporting an error",
                                       destroy_static_error};
    char text[512];
    int used = snprintf(text, sizeof text, "[" DEVICE_TYPE " %s] ", entry);
    va_list args;
    va_start(args, format);
    vsnprintf(text + used, sizeof text - (size_t)used, format, args);
    va_end(args);
    size_t length = strlen(text) + 1;
    message_error* e = malloc(sizeof *e + length);
    if (e == NULL) return &out_of_memory;
    memcpy(e->text, text, length);
    e->base.struct_size = sizeof(keel_error);
    e->base.code = code;
    e->base.message = e->text;
    e->base.destroy = destroy_message_error;
    return &e->base;
}

#define REQUIRE(cond, entry, what) \
    if (!(cond)) return fail(KEEL_STATUS_INVALID_ARGUMENT, entry, "%s", what)

/* ---- the device and its memory ----------------------------------------- */

typedef struct allocation {
    struct allocation* next;
    uint64_t addr, size;
} allocation;

struct keel_device_t {
    pthread_mutex_t mutex; /* guards allocations, used and host_blocks */
    allocation* allocations;
    uint64_t used;
    allocation* host_blocks; /* from host_alloc */
};

static struct keel_device_t g_device = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, NULL};
static const keel_host_services* g_host;

/* 1 when [addr, addr + size) lies inside one block of `list`. */
static int in_list(allocation* const* list, uint64_t addr, uint64_t size) {
    int inside = 0;
    pthread_mutex_lock(&g_device.mutex);
    for (allocation* a = *list; a != NULL && !inside; a = a->next)
        inside = addr >= a->addr && size <= a->size && addr - a->addr <= a->size - size;
    pthread_mutex_unlock(&g_device.mutex);
    return inside;
}

/* Records the block `p` of `size` bytes in `list` (through `a`); its address. */
static uint64_t push_block(allocation** list, allocation* a, void* p, uint64_t size) {
    a->addr = (uint64_t)(uintptr_t)p;
    a->size = size;
    pthread_mutex_lock(&g_device.mutex);
    a->next = *list;
    *list = a;
    pthread_mutex_unlock(&g_device.mutex);
    return a->addr;
}

/* 1 when [addr, addr + size) lies inside one live allocation. */
static int in_allocation(keel_device_addr addr, uint64_t size) {
    return in_list(&g_device.allocations, addr, size);
}

/* ---- pinned host memory (host_alloc) -------------------------------------
 * A device whose copies cannot read or write pageable host memory when they
 * execute (a DMA engine that needs page-locked memory) declares, from keel.h
 * 1.3, KEEL_DEVICE_CAP_PINNED_COPIES_ONLY: the runtime then passes its
 * memcpy_h2d/memcpy_d2h only memory from its host_alloc and stages pageable
 * memory itself, when the copy executes. This template declares it to show
 * the contract (its "device" could read any host memory) and refuses other
 * host memory in its copies. Built against an older keel.h, it copies
 * pageable memory directly, as keel.h asks of every plugin before 1.3. */
#if KEEL_ABI_VERSION_MINOR >= 3
#define PINNED_COPIES_ONLY 1
#else
#define PINNED_COPIES_ONLY 0
#endif

/* 1 when the copy may touch [p, p + size) of host memory. */
static int copyable_host_memory(const void* p, uint64_t size) {
    return !PINNED_COPIES_ONLY || size == 0 || in_list(&g_device.host_blocks, (uint64_t)(uintptr_t)p, size);
}

/* ---- event records: a point in a stream's work ------------------------- */

typedef struct record {
    int refs;  /* the event and the queued ops that use it */
    int done;
    struct timespec time;
} record;

static pthread_mutex_t g_records = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_record_done = PTHREAD_COND_INITIALIZER;

static void record_release(record* r) {
    if (r == NULL) return;
    pthread_mutex_lock(&g_records);
    int last = --r->refs == 0;
    pthread_mutex_unlock(&g_records);
    if (last) free(r);
}

static void record_wait(record* r) {
    pthread_mutex_lock(&g_records);
    while (!r->done) pthread_cond_wait(&g_record_done, &g_records);
    pthread_mutex_unlock(&g_records);
}

struct keel_event_t {
    int timing;
    record* current; /* the most recent record (under g_records); NULL if never recorded */
};

/* ---- streams: a queue of operations and the worker thread that runs it -- */

typedef enum op_kind { OP_COPY, OP_SET, OP_HOST_FN, OP_RECORD, OP_WAIT, OP_FILL, OP_AXPY } op_kind;

typedef struct op {
    struct op* next;
    op_kind kind;
    void* dst;
    const void* src;
    uint64_t size; /* bytes */
    uint8_t byte;
    float scalar;
    keel_host_fn fn;
    void* user_data;
    record* point;
} op;

struct keel_stream_t {
    pthread_mutex_t mutex; /* guards everything below */
    pthread_cond_t work;   /* an op was queued, or stopping */
    pthread_cond_t idle;   /* an op completed */
    op *head, *tail;
    uint64_t enqueued, completed;
    int stopping;
    pthread_t thread;
};

static void run_op(op* o) {
    switch (o->kind) {
        case OP_COPY: memcpy(o->dst, o->src, (size_t)o->size); break;
        case OP_SET: memset(o->dst, o->byte, (size_t)o->size); break;
        case OP_HOST_FN: o->fn(o->user_data, KEEL_STATUS_OK); break;
        case OP_WAIT: record_wait(o->point); break;
        case OP_RECORD:
            pthread_mutex_lock(&g_records);
            clock_gettime(CLOCK_MONOTONIC, &o->point->time);
            o->point->done = 1;
            pthread_cond_broadcast(&g_record_done);
            pthread_mutex_unlock(&g_records);
            break;
        case OP_FILL: {
            float* out = o->dst;
            for (uint64_t i = 0; i < o->size / sizeof(float); ++i) out[i] = o->scalar;
            break;
        }
        case OP_AXPY: {
            const float* x = o->src;
            float* y = o->dst;
            for (uint64_t i = 0; i < o->size / sizeof(float); ++i) y[i] = o->scalar * x[i] + y[i];
            break;
        }
    }
    record_release(o->point);
    free(o);
}

static void* worker(void* arg) {
    keel_stream s = arg;
    pthread_mutex_lock(&s->mutex);
    for (;;) {
        while (s->head == NULL && !s->stopping) pthread_cond_wait(&s->work, &s->mutex);
        if (s->head == NULL) break; /* stopping, and drained */
        op* o = s->head;
        s->head = o->next;
        if (s->head == NULL) s->tail = NULL;
        pthread_mutex_unlock(&s->mutex);
        run_op(o);
        pthread_mutex_lock(&s->mutex);
        ++s->completed;
        pthread_cond_broadcast(&s->idle);
    }
    pthread_mutex_unlock(&s->mutex);
    return NULL;
}

/* A zeroed op, or NULL when memory is exhausted. */
static op* new_op(op_kind kind) {
    op* o = calloc(1, sizeof *o);
    if (o != NULL) o->kind = kind;
    return o;
}

/* Appends `o`: never waits for the device (the contract of every enqueue). */
static void enqueue(keel_stream s, op* o) {
    pthread_mutex_lock(&s->mutex);
    if (s->tail) s->tail->next = o;
    else s->head = o;
    s->tail = o;
    ++s->enqueued;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mutex);
}

#define NEW_OP(var, kind, entry)                                                     \
    op* var = new_op(kind);                                                          \
    if (var == NULL) return fail(KEEL_STATUS_OUT_OF_MEMORY, entry, "no host memory for the operation")

/* ---- plugin and device entries ----------------------------------------- */

static keel_error* plugin_info(keel_plugin_info* out) {
    REQUIRE(out != NULL, "plugin_info", "out is null");
    keel_plugin_info info = {out->struct_size, DEVICE_TYPE, PLUGIN_VERSION, ""};
    memcpy(out, &info, out->struct_size < sizeof info ? out->struct_size : sizeof info);
    return NULL;
}

static void plugin_shutdown(void) {
    pthread_mutex_lock(&g_device.mutex);
    while (g_device.allocations != NULL) { /* what the caller leaked */
        allocation* a = g_device.allocations;
        g_device.allocations = a->next;
        free((void*)(uintptr_t)a->addr);
        free(a);
    }
    g_device.used = 0;
    while (g_device.host_blocks != NULL) {
        allocation* a = g_device.host_blocks;
        g_device.host_blocks = a->next;
        free((void*)(uintptr_t)a->addr);
        free(a);
    }
    pthread_mutex_unlock(&g_device.mutex);
    g_host = NULL;
}

static keel_error* device_count(uint32_t* out) {
    REQUIRE(out != NULL, "device_count", "out_count is null");
    *out = 1;
    return NULL;
}

static keel_error* device_get(uint32_t index, keel_device* out) {
    REQUIRE(out != NULL, "device_get", "out_device is null");
    if (index != 0) return fail(KEEL_STATUS_NOT_FOUND, "device_get", "no device %u (1 device)", index);
    *out = &g_device;
    return NULL;
}

static keel_error* device_properties(keel_device d, keel_device_properties* out) {
    REQUIRE(d == &g_device, "device_properties", "not a device of this plugin");
    REQUIRE(out != NULL, "device_properties", "out is null");
    keel_device_properties p;
    memset(&p, 0, sizeof p);
    p.struct_size = out->struct_size;
    snprintf(p.name, sizeof p.name, "Example device (host memory)");
    snprintf(p.vendor, sizeof p.vendor, "keel template");
    p.total_memory = TOTAL_MEMORY;
    p.capabilities = KEEL_DEVICE_CAP_HOST_ADDRESSABLE | KEEL_DEVICE_CAP_EVENT_TIMING |
                     KEEL_DEVICE_CAP_CONCURRENT_STREAMS;
#if PINNED_COPIES_ONLY
    p.capabilities |= KEEL_DEVICE_CAP_PINNED_COPIES_ONLY;
#endif
    p.compute_units = 1;
    p.alloc_alignment = ALIGNMENT;
    memcpy(out, &p, out->struct_size < sizeof p ? out->struct_size : sizeof p);
    return NULL;
}

static keel_error* device_memory_info(keel_device d, uint64_t* out_free, uint64_t* out_total) {
    REQUIRE(d == &g_device, "device_memory_info", "not a device of this plugin");
    REQUIRE(out_free != NULL && out_total != NULL, "device_memory_info", "an output is null");
    pthread_mutex_lock(&g_device.mutex);
    *out_free = TOTAL_MEMORY - g_device.used;
    pthread_mutex_unlock(&g_device.mutex);
    *out_total = TOTAL_MEMORY;
    return NULL;
}

static keel_error* device_alloc(keel_device d, uint64_t size, keel_device_addr* out) {
    REQUIRE(d == &g_device, "device_alloc", "not a device of this plugin");
    REQUIRE(out != NULL, "device_alloc", "out_addr is null");
    REQUIRE(size > 0, "device_alloc", "size is 0");
    pthread_mutex_lock(&g_device.mutex);
    int fits = size <= TOTAL_MEMORY - g_device.used;
    if (fits) g_device.used += size;
    pthread_mutex_unlock(&g_device.mutex);
    if (!fits)
        return fail(KEEL_STATUS_OUT_OF_MEMORY, "device_alloc", "%llu bytes do not fit",
                    (unsigned long long)size);
    allocation* a = malloc(sizeof *a);
    void* p = NULL;
    if (posix_memalign(&p, ALIGNMENT, (size_t)((size + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT)) != 0)
        p = NULL;
    if (a == NULL || p == NULL) {
        free(a);
        free(p);
        pthread_mutex_lock(&g_device.mutex);
        g_device.used -= size;
        pthread_mutex_unlock(&g_device.mutex);
        return fail(KEEL_STATUS_OUT_OF_MEMORY, "device_alloc", "host memory exhausted");
    }
    *out = push_block(&g_device.allocations, a, p, size);
    return NULL;
}

static keel_error* host_alloc(keel_device d, uint64_t size, void** out) {
    REQUIRE(d == &g_device, "host_alloc", "not a device of this plugin");
    REQUIRE(out != NULL && size > 0, "host_alloc", "out_ptr is null or size is 0");
    allocation* a = malloc(sizeof *a);
    void* p = size <= SIZE_MAX ? malloc((size_t)size) : NULL;
    if (a == NULL || p == NULL) {
        free(a);
        free(p);
        return fail(KEEL_STATUS_OUT_OF_MEMORY, "host_alloc", "%llu bytes of host memory do not fit",
                    (unsigned long long)size);
    }
    push_block(&g_device.host_blocks, a, p, size);
    *out = p;
    return NULL;
}

static keel_error* host_free(keel_device d, void* ptr) {
    REQUIRE(d == &g_device, "host_free", "not a device of this plugin");
    pthread_mutex_lock(&g_device.mutex);
    allocation** link = &g_device.host_blocks;
    while (*link != NULL && (*link)->addr != (uint64_t)(uintptr_t)ptr) link = &(*link)->next;
    allocation* a = *link;
    if (a != NULL) *link = a->next;
    pthread_mutex_unlock(&g_device.mutex);
    REQUIRE(a != NULL, "host_free", "not memory from host_alloc (or freed twice)");
    free(ptr);
    free(a);
    return NULL;
}

/* A second free, or an address that is not an allocation, is INVALID_ARGUMENT. */
static keel_error* device_free(keel_device d, keel_device_addr addr) {
    REQUIRE(d == &g_device, "device_free", "not a device of this plugin");
    pthread_mutex_lock(&g_device.mutex);
    allocation** link = &g_device.allocations;
    while (*link != NULL && (*link)->addr != addr) link = &(*link)->next;
    allocation* a = *link;
    if (a != NULL) {
        *link = a->next;
        g_device.used -= a->size;
    }
    pthread_mutex_unlock(&g_device.mutex);
    if (a == NULL)
        return fail(KEEL_STATUS_INVALID_ARGUMENT, "device_free", "0x%llx is not a live allocation",
                    (unsigned long long)addr);
    free((void*)(uintptr_t)a->addr);
    free(a);
    return NULL;
}

/* ---- stream entries ----------------------------------------------------- */

static keel_error* stream_create(keel_device d, uint32_t flags, keel_stream* out) {
    REQUIRE(d == &g_device, "stream_create", "not a device of this plugin");
    REQUIRE(out != NULL, "stream_create", "out_stream is null");
    REQUIRE(flags == 0, "stream_create", "flags must be 0");
    keel_stream s = calloc(1, sizeof *s);
    if (s == NULL) return fail(KEEL_STATUS_OUT_OF_MEMORY, "stream_create", "no host memory");
    pthread_mutex_init(&s->mutex, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->idle, NULL);
    if (pthread_create(&s->thread, NULL, worker, s) != 0) {
        free(s);
        return fail(KEEL_STATUS_UNAVAILABLE, "stream_create", "cannot start a worker thread");
    }
    *out = s;
    return NULL;
}

static keel_error* stream_destroy(keel_stream s) {
    REQUIRE(s != NULL, "stream_destroy", "stream is null");
    pthread_mutex_lock(&s->mutex);
    s->stopping = 1;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mutex);
    pthread_join(s->thread, NULL); /* runs what is queued first */
    pthread_cond_destroy(&s->idle);
    pthread_cond_destroy(&s->work);
    pthread_mutex_destroy(&s->mutex);
    free(s);
    return NULL;
}

static keel_error* stream_synchronize(keel_stream s) {
    REQUIRE(s != NULL, "stream_synchronize", "stream is null");
    pthread_mutex_lock(&s->mutex);
    uint64_t target = s->enqueued;
    while (s->completed < target) pthread_cond_wait(&s->idle, &s->mutex);
    pthread_mutex_unlock(&s->mutex);
    return NULL;
}

static keel_error* stream_query(keel_stream s, int32_t* out_done) {
    REQUIRE(s != NULL && out_done != NULL, "stream_query", "stream or out_done is null");
    pthread_mutex_lock(&s->mutex);
    *out_done = s->completed == s->enqueued;
    pthread_mutex_unlock(&s->mutex);
    return NULL;
}

static keel_error* stream_enqueue_host_func(keel_stream s, keel_host_fn fn, void* user_data) {
    REQUIRE(s != NULL && fn != NULL, "stream_enqueue_host_func", "stream or fn is null");
    NEW_OP(o, OP_HOST_FN, "stream_enqueue_host_func");
    o->fn = fn;
    o->user_data = user_data;
    enqueue(s, o);
    return NULL;
}

/* ---- event entries ------------------------------------------------------ */

static keel_error* event_create(keel_device d, uint32_t flags, keel_event* out) {
    REQUIRE(d == &g_device, "event_create", "not a device of this plugin");
    REQUIRE(out != NULL, "event_create", "out_event is null");
    keel_event e = calloc(1, sizeof *e);
    if (e == NULL) return fail(KEEL_STATUS_OUT_OF_MEMORY, "event_create", "no host memory");
    e->timing = (flags & KEEL_EVENT_TIMING) != 0;
    *out = e;
    return NULL;
}

static keel_error* event_destroy(keel_event e) {
    REQUIRE(e != NULL, "event_destroy", "event is null");
    record_release(e->current); /* a pending record keeps its own reference */
    free(e);
    return NULL;
}

static keel_error* event_record(keel_event e, keel_stream s) {
    REQUIRE(e != NULL && s != NULL, "event_record", "event or stream is null");
    record* point = calloc(1, sizeof *point);
    NEW_OP(o, OP_RECORD, "event_record");
    if (point == NULL) {
        free(o);
        return fail(KEEL_STATUS_OUT_OF_MEMORY, "event_record", "no host memory");
    }
    point->refs = 2; /* the event and the op */
    o->point = point;
    pthread_mutex_lock(&g_records);
    record* old = e->current;
    e->current = point;
    pthread_mutex_unlock(&g_records);
    record_release(old);
    enqueue(s, o);
    return NULL;
}

/* The event's current record with a reference taken, or NULL. */
static record* current_record(keel_event e) {
    pthread_mutex_lock(&g_records);
    record* r = e->current;
    if (r != NULL) ++r->refs;
    pthread_mutex_unlock(&g_records);
    return r;
}

static keel_error* stream_wait_event(keel_stream s, keel_event e) {
    REQUIRE(s != NULL && e != NULL, "stream_wait_event", "stream or event is null");
    record* point = current_record(e);
    if (point == NULL) return NULL; /* never recorded: already complete */
    op* o = new_op(OP_WAIT);
    if (o == NULL) {
        record_release(point);
        return fail(KEEL_STATUS_OUT_OF_MEMORY, "stream_wait_event", "no host memory");
    }
    o->point = point;
    enqueue(s, o);
    return NULL;
}

static keel_error* event_query(keel_event e, int32_t* out_done) {
    REQUIRE(e != NULL && out_done != NULL, "event_query", "event or out_done is null");
    pthread_mutex_lock(&g_records);
    *out_done = e->current == NULL || e->current->done;
    pthread_mutex_unlock(&g_records);
    return NULL;
}

static keel_error* event_synchronize(keel_event e) {
    REQUIRE(e != NULL, "event_synchronize", "event is null");
    record* point = current_record(e);
    if (point != NULL) record_wait(point);
    record_release(point);
    return NULL;
}

static double seconds(struct timespec t) { return (double)t.tv_sec + (double)t.tv_nsec * 1e-9; }

static keel_error* event_elapsed_time(keel_event start, keel_event end, float* out_ms) {
    REQUIRE(start != NULL && end != NULL && out_ms != NULL, "event_elapsed_time", "a null argument");
    if (!start->timing || !end->timing)
        return fail(KEEL_STATUS_FAILED_PRECONDITION, "event_elapsed_time",
                    "both events must be created with KEEL_EVENT_TIMING");
    pthread_mutex_lock(&g_records);
    int complete = start->current && end->current && start->current->done && end->current->done;
    double ms = complete ? (seconds(end->current->time) - seconds(start->current->time)) * 1e3 : 0;
    pthread_mutex_unlock(&g_records);
    if (!complete)
        return fail(KEEL_STATUS_FAILED_PRECONDITION, "event_elapsed_time",
                    "an event is not recorded or not complete yet");
    *out_ms = (float)ms;
    return NULL;
}

/* ---- copies ------------------------------------------------------------- */

static keel_error* check_device_range(const char* entry, keel_device_addr addr, uint64_t size) {
    if (!in_allocation(addr, size))
        return fail(KEEL_STATUS_OUT_OF_RANGE, entry, "[0x%llx, +%llu) is not inside an allocation",
                    (unsigned long long)addr, (unsigned long long)size);
    return NULL;
}

/* A zero-byte copy or fill succeeds and enqueues nothing. */
static keel_error* enqueue_copy(const char* entry, keel_stream s, void* dst, const void* src,
                                uint64_t size) {
    if (size == 0) return NULL;
    NEW_OP(o, OP_COPY, entry);
    o->dst = dst;
    o->src = src;
    o->size = size;
    enqueue(s, o);
    return NULL;
}

#define CHECK(call)                    \
    do {                               \
        keel_error* error_ = (call);   \
        if (error_ != NULL) return error_; \
    } while (0)

static keel_error* memcpy_h2d(keel_stream s, keel_device_addr dst, const void* src, uint64_t size) {
    REQUIRE(s != NULL && (src != NULL || size == 0), "memcpy_h2d", "stream or src is null");
    if (size > 0) CHECK(check_device_range("memcpy_h2d", dst, size));
    REQUIRE(copyable_host_memory(src, size), "memcpy_h2d", "src is not memory from host_alloc (pinned copies only)");
    return enqueue_copy("memcpy_h2d", s, (void*)(uintptr_t)dst, src, size);
}

static keel_error* memcpy_d2h(keel_stream s, void* dst, keel_device_addr src, uint64_t size) {
    REQUIRE(s != NULL && (dst != NULL || size == 0), "memcpy_d2h", "stream or dst is null");
    if (size > 0) CHECK(check_device_range("memcpy_d2h", src, size));
    REQUIRE(copyable_host_memory(dst, size), "memcpy_d2h", "dst is not memory from host_alloc (pinned copies only)");
    return enqueue_copy("memcpy_d2h", s, dst, (const void*)(uintptr_t)src, size);
}

static keel_error* memcpy_d2d(keel_stream s, keel_device_addr dst, keel_device_addr src, uint64_t size) {
    REQUIRE(s != NULL, "memcpy_d2d", "stream is null");
    if (size == 0) return NULL;
    CHECK(check_device_range("memcpy_d2d", src, size));
    CHECK(check_device_range("memcpy_d2d", dst, size));
    REQUIRE(dst + size <= src || src + size <= dst, "memcpy_d2d", "the ranges overlap");
    return enqueue_copy("memcpy_d2d", s, (void*)(uintptr_t)dst, (const void*)(uintptr_t)src, size);
}

static keel_error* memset_d8(keel_stream s, keel_device_addr dst, uint8_t value, uint64_t size) {
    REQUIRE(s != NULL, "memset_d8", "stream is null");
    if (size == 0) return NULL;
    CHECK(check_device_range("memset_d8", dst, size));
    NEW_OP(o, OP_SET, "memset_d8");
    o->dst = (void*)(uintptr_t)dst;
    o->byte = value;
    o->size = size;
    enqueue(s, o);
    return NULL;
}

/* ---- kernels: fill and axpy (docs/kernels.md, installed as share/doc/keel/kernels.md) ------------------- */

struct keel_kernel_t {
    const char* name;
    op_kind kind;
};
static struct keel_kernel_t g_kernels[] = {{"fill", OP_FILL}, {"axpy", OP_AXPY}};

static keel_error* kernel_get(keel_device d, const char* name, keel_kernel* out) {
    REQUIRE(d == &g_device, "kernel_get", "not a device of this plugin");
    REQUIRE(name != NULL && out != NULL, "kernel_get", "name or out_kernel is null");
    for (size_t i = 0; i < sizeof g_kernels / sizeof g_kernels[0]; ++i)
        if (strcmp(g_kernels[i].name, name) == 0) {
            *out = &g_kernels[i];
            return NULL;
        }
    return fail(KEEL_STATUS_NOT_FOUND, "kernel_get", "no kernel named '%s' (kernels: fill, axpy)", name);
}

/* Argument `i` of `kernel` as an f32 buffer inside an allocation. */
static keel_error* buffer_arg(const char* kernel, const keel_launch_args* args, size_t i,
                              uint64_t* addr, uint64_t* size) {
    const keel_kernel_arg* a = keel_kernel_arg_at(args, i);
    if (a->kind != KEEL_ARG_BUFFER || a->dtype != KEEL_DTYPE_F32)
        return fail(KEEL_STATUS_INVALID_ARGUMENT, "kernel_launch", "%s: argument %zu must be an f32 buffer",
                    kernel, i);
    if (a->value.buffer.size == 0 || !in_allocation(a->value.buffer.addr, a->value.buffer.size))
        return fail(KEEL_STATUS_INVALID_ARGUMENT, "kernel_launch",
                    "%s: argument %zu is empty or not inside an allocation", kernel, i);
    *addr = a->value.buffer.addr;
    *size = a->value.buffer.size;
    return NULL;
}

/* Argument `i` of `kernel` as a scalar (f32, or f64 converted). */
static keel_error* scalar_arg(const char* kernel, const keel_launch_args* args, size_t i, float* out) {
    const keel_kernel_arg* a = keel_kernel_arg_at(args, i);
    if (a->kind == KEEL_ARG_SCALAR && a->dtype == KEEL_DTYPE_F32) *out = a->value.scalar.f32;
    else if (a->kind == KEEL_ARG_SCALAR && a->dtype == KEEL_DTYPE_F64) *out = (float)a->value.scalar.f64;
    else return fail(KEEL_STATUS_INVALID_ARGUMENT, "kernel_launch", "%s: argument %zu must be an f32 scalar",
                     kernel, i);
    return NULL;
}

/* Validates everything before enqueuing anything. */
static keel_error* kernel_launch(keel_stream s, keel_kernel k, const keel_launch_args* args) {
    REQUIRE(s != NULL && k != NULL && args != NULL, "kernel_launch", "stream, kernel or args is null");
    REQUIRE(args->arg_struct_size >= KEEL_KERNEL_ARG_STRUCT_SIZE, "kernel_launch", "arg_struct_size too small");
    const size_t expected = k->kind == OP_FILL ? 2 : 3;
    if (args->arg_count != expected)
        return fail(KEEL_STATUS_INVALID_ARGUMENT, "kernel_launch", "%s takes %zu arguments, got %zu", k->name,
                    expected, args->arg_count);
    NEW_OP(o, k->kind, "kernel_launch");
    uint64_t out_addr = 0, out_size = 0, x_addr = 0, x_size = 0;
    keel_error* e;
    if (k->kind == OP_FILL) { /* fill(out: f32 buffer, value: f32) */
        if ((e = buffer_arg("fill", args, 0, &out_addr, &out_size)) ||
            (e = scalar_arg("fill", args, 1, &o->scalar))) {
            free(o);
            return e;
        }
    } else { /* axpy(alpha: f32, x: f32 buffer, y: f32 buffer of x's size): y = alpha * x + y */
        if ((e = scalar_arg("axpy", args, 0, &o->scalar)) ||
            (e = buffer_arg("axpy", args, 1, &x_addr, &x_size)) ||
            (e = buffer_arg("axpy", args, 2, &out_addr, &out_size))) {
            free(o);
            return e;
        }
        if (x_size != out_size) {
            free(o);
            return fail(KEEL_STATUS_INVALID_ARGUMENT, "kernel_launch", "axpy: x has %llu bytes but y has %llu",
                        (unsigned long long)x_size, (unsigned long long)out_size);
        }
    }
    o->dst = (void*)(uintptr_t)out_addr;
    o->src = (const void*)(uintptr_t)x_addr;
    o->size = out_size;
    enqueue(s, o);
    return NULL;
}

/* ---- the table and the entry symbol ------------------------------------- */

static keel_plugin_api g_api;

KEEL_PLUGIN_EXPORT keel_error* keel_plugin_init(const keel_host_services* host,
                                                const keel_plugin_api** out_api) {
    REQUIRE(host != NULL && out_api != NULL, "keel_plugin_init", "host or out_api is null");
    if (host->abi_major != KEEL_ABI_VERSION_MAJOR)
        return fail(KEEL_STATUS_VERSION_MISMATCH, "keel_plugin_init",
                    "the runtime offers ABI %u.%u, this plugin implements %u.%u", host->abi_major,
                    host->abi_minor, KEEL_ABI_VERSION_MAJOR, KEEL_ABI_VERSION_MINOR);
#if KEEL_ABI_VERSION_MINOR >= 6
    /* keel.h [options.read-at-init]: this plugin takes no options, so it
     * refuses any it is given (a runtime of 1.6 or later may give some). */
    if (host->struct_size >= KEEL_HOST_SERVICES_STRUCT_SIZE && host->option_count > 0) {
        const keel_option* first = keel_option_at(host, 0);
        return fail(KEEL_STATUS_INVALID_ARGUMENT, "keel_plugin_init", "unknown option '%s' (it takes no options)",
                    first->key != NULL ? first->key : "(null)");
    }
#endif
    g_host = host;
    memset(&g_api, 0, sizeof g_api);
    g_api.struct_size = KEEL_PLUGIN_API_STRUCT_SIZE;
    g_api.abi_major = KEEL_ABI_VERSION_MAJOR;
    g_api.abi_minor = KEEL_ABI_VERSION_MINOR;
    g_api.plugin_info = plugin_info;
    g_api.plugin_shutdown = plugin_shutdown;
    g_api.device_count = device_count;
    g_api.device_get = device_get;
    g_api.device_properties = device_properties;
    g_api.stream_create = stream_create;
    g_api.stream_destroy = stream_destroy;
    g_api.stream_synchronize = stream_synchronize;
    g_api.stream_query = stream_query;
    g_api.stream_wait_event = stream_wait_event;
    g_api.stream_enqueue_host_func = stream_enqueue_host_func;
    g_api.event_create = event_create;
    g_api.event_destroy = event_destroy;
    g_api.event_record = event_record;
    g_api.event_query = event_query;
    g_api.event_synchronize = event_synchronize;
    g_api.device_alloc = device_alloc;
    g_api.device_free = device_free;
    g_api.memcpy_h2d = memcpy_h2d;
    g_api.memcpy_d2h = memcpy_d2h;
    g_api.memcpy_d2d = memcpy_d2d;
    g_api.memset_d8 = memset_d8;
    /* Optional entries; those left NULL (memcpy_h2d_inline, the native
     * handles, ...) read as absent. */
    g_api.device_memory_info = device_memory_info;
    g_api.host_alloc = host_alloc;
    g_api.host_free = host_free;
    g_api.event_elapsed_time = event_elapsed_time;
    g_api.kernel_get = kernel_get;
    g_api.kernel_launch = kernel_launch;
    *out_api = &g_api;
    return NULL;
}
