// A small but real keel plugin for tests, compiled once and linked into
// several libraries (tests/loader/CMakeLists.txt), each with its own
// fake_build.cpp: its variant (fake_build.hpp) selects what is wrong with it,
// its type is the device type it reports.
//
// The good variant is asynchronous like a real device: each stream is a
// worker thread running a FIFO queue, events complete when the worker
// reaches them, stream-wait-event blocks only the waiting worker. Device
// memory is host memory (HOST_ADDRESSABLE), range-checked at enqueue.
//
// If KEEL_FAKE_PLUGIN_LOG names a file at init, the plugin appends a line
// per init, stream destroy and shutdown, so tests can check lifetimes.
// KEEL_FAKE_FAIL=<entry> at init makes that entry (e.g. memcpy_d2h, or
// keel_plugin_init) fail every call with DEVICE_ERROR: keel-cts must still
// finish with a report (tests/cts). stream_destroy and event_destroy still
// release their handle, as the ABI requires, and then report the failure.
// KEEL_FAKE_INLINE=1 at init makes it run all work inline at enqueue, like a
// naive synchronous fake: the conformance suite must then fail (a check of
// the suite itself, run by hand).
// A variant declaring 1.6 or later takes these three as options too (keel.h
// "Plugin options": fail, inline, plugin_log), which override the variables;
// older variants refuse nothing and read none, as a plugin of their minor.
#include "fake_build.hpp"

#include <keel/environment.hpp>
#include <keel/keel.h>
#include <keel/plugin/boundary.hpp>
#include <keel/plugin/comm_config.hpp>
#include <keel/plugin/host_log.hpp>
#include <keel/plugin/kernel_args.hpp>
#include <keel/plugin/native_handle.hpp>
#include <keel/plugin/options.hpp>
#include <keel/plugin/p2p_ops.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>

using keel_fake::fake_build;
using keel_fake::Variant;
using keel::Error;
using keel::Result;
using keel::ok;
using keel::plugin::entry;

// ---- handles (the plugin defines what the ABI's opaque handles are) ----------

namespace {

constexpr std::uint32_t kDeviceCount = 2;
constexpr std::uint64_t kTotalMemory = 64ull << 20;
constexpr std::uint64_t kAlignment = 256;

std::string hex(std::uint64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
    return b;
}

// Set at init from KEEL_FAKE_INLINE.
std::atomic<bool> g_run_inline{false};

// The entry KEEL_FAKE_FAIL names (read at init, before any other entry).
std::string& failing_entry() {
    static std::string name;
    return name;
}

Result<void> injected_failure(const char* entry_name) {
    if (failing_entry() != entry_name) return ok();
    return Error(KEEL_STATUS_DEVICE_ERROR, std::string("injected failure of ") + entry_name +
                                               " (KEEL_FAKE_FAIL)");
}

// A stream's worker: runs queued work in order on its own thread.
class Worker {
public:
    using Task = std::function<void()>;

    Worker() : thread_([this] { run(); }) {}
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;
    Worker(Worker&&) = delete;
    Worker& operator=(Worker&&) = delete;
    ~Worker() { stop(); }

    // Returns the ticket of the task: it has run once completed() >= ticket.
    std::uint64_t push(Task task) {
        if (g_run_inline.load()) {
            task();
            std::lock_guard lock(mutex_);
            ++completed_;
            cv_.notify_all();
            return ++enqueued_;
        }
        std::lock_guard lock(mutex_);
        queue_.push_back(std::move(task));
        cv_.notify_all();
        return ++enqueued_;
    }
    std::uint64_t enqueued() {
        std::lock_guard lock(mutex_);
        return enqueued_;
    }
    bool reached(std::uint64_t ticket) {
        std::lock_guard lock(mutex_);
        return completed_ >= ticket;
    }
    void wait_until(std::uint64_t ticket) {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return completed_ >= ticket; });
    }
    // Runs what is queued, then ends the thread.
    void stop() {
        {
            std::lock_guard lock(mutex_);
            if (stopping_) return;
            stopping_ = true;
            cv_.notify_all();
        }
        thread_.join();
    }

private:
    void run() {
        std::unique_lock lock(mutex_);
        for (;;) {
            cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) return;  // stopping and drained
            Task task = std::move(queue_.front());
            queue_.pop_front();
            lock.unlock();
            task();
            task = nullptr;  // destroy captures outside the lock
            lock.lock();
            ++completed_;
            cv_.notify_all();
        }
    }

    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<Task> queue_;
    std::uint64_t enqueued_ = 0;
    std::uint64_t completed_ = 0;
    bool stopping_ = false;
    std::thread thread_;  // last: starts after the rest is initialised
};

// One record of an event: the stream point it captured and, for timing
// events, when the stream reached it (written by the stream's worker, read
// only after the worker reached the ticket).
struct RecordPoint {
    std::shared_ptr<Worker> worker;
    std::uint64_t ticket = 0;
    std::chrono::steady_clock::time_point time;
    std::optional<Error> failed;  // the stream's error when it reached the record
};

// A stream's sticky error: set by a failing fallible host function (the
// comm variants have stream_enqueue_fallible_host_func) or a failed stream
// it waited on. Work already queued behind the failure still runs, as on a
// device that cannot skip submitted work (keel.h [host-func.fallible]).
struct StreamFailure {
    std::mutex mutex;
    std::optional<Error> error;
    void set(Error e) {
        std::lock_guard lock(mutex);
        if (!error) error = std::move(e);
    }
    std::optional<Error> get() {
        std::lock_guard lock(mutex);
        return error;
    }
    keel_status status() {
        std::lock_guard lock(mutex);
        return error ? error->code() : KEEL_STATUS_OK;
    }
};

struct EventState {
    std::mutex mutex;
    bool timing = false;
    std::shared_ptr<RecordPoint> point;  // the most recent record; null if never recorded
};

}  // namespace

struct keel_device_t {
    std::uint32_t index = 0;
    std::string name;
    std::mutex mutex;
    std::map<std::uint64_t, std::uint64_t> allocations;  // address -> size
    // Pinned host memory, kept until host_free succeeds (or the plugin shuts
    // down, as a driver reclaims a context's memory): an injected host_free
    // failure leaves it reachable rather than leaked.
    std::set<void*> host_allocations;
    std::uint64_t used = 0;

    // [addr, addr + size) must lie inside one live allocation.
    Result<void> check_range(keel_device_addr addr, std::uint64_t size, const char* role) {
        std::lock_guard lock(mutex);
        auto it = allocations.upper_bound(addr);
        if (it != allocations.begin()) {
            --it;
            if (addr >= it->first && size <= it->second && addr - it->first <= it->second - size)
                return ok();
        }
        return Error(KEEL_STATUS_OUT_OF_RANGE, std::string(role) + " [" + hex(addr) + ", +" +
                                                   std::to_string(size) +
                                                   ") is not inside an allocation of " + name);
    }
};

struct keel_stream_t {
    keel_device_t* device = nullptr;
    std::shared_ptr<Worker> worker;
    std::shared_ptr<StreamFailure> failure = std::make_shared<StreamFailure>();
};

struct keel_event_t {
    keel_device_t* device = nullptr;
    std::shared_ptr<EventState> state;
};

struct keel_kernel_t {
    const char* name;
    Result<Worker::Task> (*prepare)(keel_device_t*, const keel::plugin::LaunchArgsView&);
};

namespace {

struct PluginState {
    std::array<keel_device_t, kDeviceCount> devices;
    std::string log_path;
    keel::plugin::Options options;  // what plugin_option_info describes
};
std::unique_ptr<PluginState> g_state;
// The table with room for entries a newer minor appends after ours.
struct ExtendedTable {
    keel_plugin_api api;
    keel_error* (*future_entry_a)(keel_device);
    keel_error* (*future_entry_b)(keel_stream, std::uint64_t);
};
[[maybe_unused]] ExtendedTable g_extended{};
[[maybe_unused]] keel_plugin_api& g_table = g_extended.api;

void trace(const char* what) {
    if (!g_state || g_state->log_path.empty()) return;
    if (FILE* f = std::fopen(g_state->log_path.c_str(), "a")) {
        std::fprintf(f, "%s %s\n", what, fake_build.type);
        std::fclose(f);
    }
}

Result<void> require_stream_handle(keel_stream s) {
    if (s == nullptr || !s->worker) return Error(KEEL_STATUS_INVALID_ARGUMENT, "stream is null");
    return ok();
}

// For enqueues: a stream already known to have failed refuses them.
Result<void> require_stream(keel_stream s) {
    KEEL_TRY(require_stream_handle(s));
    if (std::optional<Error> failed = s->failure->get()) return *failed;
    return ok();
}

// ---- kernels -----------------------------------------------------------------

constexpr keel_dtype kF32[] = {KEEL_DTYPE_F32};

// docs/kernels.md: a kernel buffer outside the allocations is INVALID_ARGUMENT
// (a copy's is OUT_OF_RANGE).
Result<void> check_kernel_buffer(keel_device_t* dev, keel_device_addr addr, std::uint64_t size, const char* role) {
    auto inside = dev->check_range(addr, size, role);
    if (!inside.ok()) return Error(KEEL_STATUS_INVALID_ARGUMENT, inside.error().message());
    return ok();
}

Result<Worker::Task> prepare_fill(keel_device_t* dev, const keel::plugin::LaunchArgsView& args) {
    KEEL_TRY(args.expect_count(2));
    KEEL_TRY_ASSIGN(auto out, args.buffer(0, "out", kF32));
    KEEL_TRY_ASSIGN(double value, args.scalar_f64(1, "value"));
    KEEL_TRY(check_kernel_buffer(dev, out.addr, out.size, "[fill] out"));
    return Worker::Task([out, v = static_cast<float>(value)] {
        auto* p = reinterpret_cast<float*>(out.addr);
        for (std::uint64_t i = 0; i < out.size / sizeof(float); ++i) p[i] = v;
    });
}

Result<Worker::Task> prepare_axpy(keel_device_t* dev, const keel::plugin::LaunchArgsView& args) {
    KEEL_TRY(args.expect_count(3));
    KEEL_TRY_ASSIGN(double alpha, args.scalar_f64(0, "alpha"));
    KEEL_TRY_ASSIGN(auto x, args.buffer(1, "x", kF32));
    KEEL_TRY_ASSIGN(auto y, args.buffer(2, "y", kF32));
    if (x.size != y.size)
        return args.invalid("x has " + std::to_string(x.size) + " bytes but y has " +
                            std::to_string(y.size));
    KEEL_TRY(check_kernel_buffer(dev, x.addr, x.size, "[axpy] x"));
    KEEL_TRY(check_kernel_buffer(dev, y.addr, y.size, "[axpy] y"));
    return Worker::Task([x, y, a = static_cast<float>(alpha)] {
        const auto* px = reinterpret_cast<const float*>(x.addr);
        auto* py = reinterpret_cast<float*>(y.addr);
        for (std::uint64_t i = 0; i < y.size / sizeof(float); ++i) py[i] = a * px[i] + py[i];
    });
}

keel_kernel_t g_kernels[] = {{"fill", &prepare_fill}, {"axpy", &prepare_axpy}};

// ---- entries -----------------------------------------------------------------

keel_error* plugin_info(keel_plugin_info* out) {
    return entry(fake_build.type, "plugin_info", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("plugin_info"));
        KEEL_TRY(keel::plugin::require_non_null(out, "out"));
        out->device_type = fake_build.variant == Variant::type_mismatch ? "other" : fake_build.type;
        out->version = fake_build.variant == Variant::duplicate ? "0.0.1-duplicate" : "0.0.1";
        out->status = "a test double";
        return ok();
    });
}

void plugin_shutdown() {
    trace("shutdown");
    if (g_state) {
        for (keel_device_t& d : g_state->devices) {
            for (auto& [addr, size] : d.allocations) std::free(reinterpret_cast<void*>(addr));
            for (void* p : d.host_allocations) std::free(p);
        }
    }
    g_state.reset();
    keel::plugin::HostLog::uninstall();
}

keel_error* device_count(std::uint32_t* out) {
    return entry(fake_build.type, "device_count", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("device_count"));
        KEEL_TRY(keel::plugin::require_non_null(out, "out_count"));
        *out = kDeviceCount;
        return ok();
    });
}

keel_error* device_get(std::uint32_t index, keel_device* out) {
    return entry(fake_build.type, "device_get", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("device_get"));
        KEEL_TRY(keel::plugin::require_non_null(out, "out_device"));
        if (index >= kDeviceCount)
            return Error(KEEL_STATUS_NOT_FOUND, "no device " + std::to_string(index));
        *out = &g_state->devices[index];
        return ok();
    });
}

keel_error* device_properties(keel_device d, keel_device_properties* out) {
    return entry(fake_build.type, "device_properties", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("device_properties"));
        KEEL_TRY(keel::plugin::require_non_null(d, "device"));
        KEEL_TRY(keel::plugin::require_non_null(out, "out"));
        keel_device_properties p{};
        p.struct_size = out->struct_size;
        std::snprintf(p.name, sizeof p.name, "Fake device %u", d->index);
        std::snprintf(p.vendor, sizeof p.vendor, "keel tests");
        p.total_memory = kTotalMemory;
        p.capabilities = KEEL_DEVICE_CAP_HOST_ADDRESSABLE | KEEL_DEVICE_CAP_CONCURRENT_STREAMS;
        p.capabilities |= fake_build.extra_capabilities;
        if (fake_build.variant != Variant::old_minor && fake_build.variant != Variant::minimum_of_minor)
            p.capabilities |= KEEL_DEVICE_CAP_EVENT_TIMING;
        p.compute_units = 1;
        p.max_allocation = 0;
        p.alloc_alignment = kAlignment;
        std::memcpy(out, &p, std::min<std::size_t>(out->struct_size, sizeof p));
        return ok();
    });
}

keel_error* stream_create(keel_device d, std::uint32_t flags, keel_stream* out) {
    return entry(fake_build.type, "stream_create", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("stream_create"));
        KEEL_TRY(keel::plugin::require_non_null(d, "device"));
        KEEL_TRY(keel::plugin::require_non_null(out, "out_stream"));
        if (flags != 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, "flags must be 0");
        auto s = std::make_unique<keel_stream_t>();
        s->device = d;
        s->worker = std::make_shared<Worker>();
        *out = s.release();
        return ok();
    });
}

keel_error* stream_destroy(keel_stream s) {
    return entry(fake_build.type, "stream_destroy", [&]() -> Result<void> {
        KEEL_TRY(require_stream_handle(s));
        std::unique_ptr<keel_stream_t> owned(s);
        owned->worker->stop();
        trace("stream_destroy");
        // Released either way, as the ABI says: the failure is reported after.
        return injected_failure("stream_destroy");
    });
}

keel_error* stream_synchronize(keel_stream s) {
    return entry(fake_build.type, "stream_synchronize", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("stream_synchronize"));
        KEEL_TRY(require_stream_handle(s));
        s->worker->wait_until(s->worker->enqueued());
        if (std::optional<Error> failed = s->failure->get()) return *failed;
        return ok();
    });
}

keel_error* stream_query(keel_stream s, std::int32_t* out_done) {
    return entry(fake_build.type, "stream_query", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("stream_query"));
        KEEL_TRY(require_stream_handle(s));
        KEEL_TRY(keel::plugin::require_non_null(out_done, "out_done"));
        if (std::optional<Error> failed = s->failure->get()) return *failed;
        *out_done = s->worker->reached(s->worker->enqueued()) ? 1 : 0;
        return ok();
    });
}

// The most recent record of `e` (null if never recorded).
std::shared_ptr<RecordPoint> current_point(keel_event e) {
    std::lock_guard lock(e->state->mutex);
    return e->state->point;
}

keel_error* stream_wait_event(keel_stream s, keel_event e) {
    return entry(fake_build.type, "stream_wait_event", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("stream_wait_event"));
        KEEL_TRY(require_stream(s));
        KEEL_TRY(keel::plugin::require_non_null(e, "event"));
        std::shared_ptr<RecordPoint> point = current_point(e);
        if (!point) return ok();  // never recorded: already complete
        s->worker->push([point, failure = s->failure] {
            point->worker->wait_until(point->ticket);
            if (point->failed) failure->set(*point->failed);
        });
        return ok();
    });
}

keel_error* stream_enqueue_host_func(keel_stream s, keel_host_fn fn, void* user_data) {
    return entry(fake_build.type, "stream_enqueue_host_func", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("stream_enqueue_host_func"));
        KEEL_TRY(require_stream(s));
        if (fn == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "fn is null");
        s->worker->push([fn, user_data, failure = s->failure] { fn(user_data, failure->status()); });
        return ok();
    });
}

// keel.h 1.4: its error fails the stream at that point (the comm variants'
// table has it: fake_comm.hpp).
[[maybe_unused]] keel_error* stream_enqueue_fallible_host_func(keel_stream s, keel_fallible_host_fn fn, void* user_data) {
    return entry(fake_build.type, "stream_enqueue_fallible_host_func", [&]() -> Result<void> {
        KEEL_TRY(require_stream(s));
        if (fn == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "fn is null");
        s->worker->push([fn, user_data, failure = s->failure] {
            const keel_status status = failure->status();
            keel_error* e = fn(user_data, status);
            if (e == nullptr) return;
            if (status == KEEL_STATUS_OK)
                failure->set(Error(e->code, std::string("a host function failed its stream: ") + e->message));
            keel_error_destroy(e);
        });
        return ok();
    });
}

keel_error* event_create(keel_device d, std::uint32_t flags, keel_event* out) {
    return entry(fake_build.type, "event_create", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("event_create"));
        KEEL_TRY(keel::plugin::require_non_null(d, "device"));
        KEEL_TRY(keel::plugin::require_non_null(out, "out_event"));
        auto e = std::make_unique<keel_event_t>();
        e->device = d;
        e->state = std::make_shared<EventState>();
        e->state->timing = (flags & KEEL_EVENT_TIMING) != 0;
        *out = e.release();
        return ok();
    });
}

keel_error* event_destroy(keel_event e) {
    return entry(fake_build.type, "event_destroy", [&]() -> Result<void> {
        KEEL_TRY(keel::plugin::require_non_null(e, "event"));
        std::unique_ptr<keel_event_t> owned(e);
        return injected_failure("event_destroy");  // released either way
    });
}

keel_error* event_record(keel_event e, keel_stream s) {
    return entry(fake_build.type, "event_record", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("event_record"));
        KEEL_TRY(keel::plugin::require_non_null(e, "event"));
        KEEL_TRY(require_stream(s));
        auto point = std::make_shared<RecordPoint>();
        point->worker = s->worker;
        const bool timing = e->state->timing;
        point->ticket = s->worker->push([point, timing, failure = s->failure] {
            if (timing) point->time = std::chrono::steady_clock::now();
            point->failed = failure->get();
        });
        std::lock_guard lock(e->state->mutex);
        e->state->point = std::move(point);
        return ok();
    });
}

keel_error* event_query(keel_event e, std::int32_t* out_done) {
    return entry(fake_build.type, "event_query", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("event_query"));
        KEEL_TRY(keel::plugin::require_non_null(e, "event"));
        KEEL_TRY(keel::plugin::require_non_null(out_done, "out_done"));
        std::shared_ptr<RecordPoint> point = current_point(e);
        *out_done = !point || point->worker->reached(point->ticket) ? 1 : 0;
        if (*out_done != 0 && point && point->failed) return *point->failed;
        return ok();
    });
}

keel_error* event_synchronize(keel_event e) {
    return entry(fake_build.type, "event_synchronize", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("event_synchronize"));
        KEEL_TRY(keel::plugin::require_non_null(e, "event"));
        if (std::shared_ptr<RecordPoint> point = current_point(e)) {
            point->worker->wait_until(point->ticket);
            if (point->failed) return *point->failed;
        }
        return ok();
    });
}

keel_error* event_elapsed_time(keel_event start, keel_event end, float* out_ms) {
    return entry(fake_build.type, "event_elapsed_time", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("event_elapsed_time"));
        KEEL_TRY(keel::plugin::require_non_null(start, "start"));
        KEEL_TRY(keel::plugin::require_non_null(end, "end"));
        KEEL_TRY(keel::plugin::require_non_null(out_ms, "out_ms"));
        std::chrono::steady_clock::time_point t[2];
        keel_event events[2] = {start, end};
        for (int i = 0; i < 2; ++i) {
            if (!events[i]->state->timing)
                return Error(KEEL_STATUS_FAILED_PRECONDITION, "event was created without timing");
            std::shared_ptr<RecordPoint> point = current_point(events[i]);
            if (!point || !point->worker->reached(point->ticket))
                return Error(KEEL_STATUS_FAILED_PRECONDITION, "event is not recorded or not complete");
            t[i] = point->time;
        }
        *out_ms = std::chrono::duration<float, std::milli>(t[1] - t[0]).count();
        return ok();
    });
}

keel_error* device_alloc(keel_device d, std::uint64_t size, keel_device_addr* out) {
    return entry(fake_build.type, "device_alloc", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("device_alloc"));
        KEEL_TRY(keel::plugin::require_non_null(d, "device"));
        KEEL_TRY(keel::plugin::require_non_null(out, "out_addr"));
        if (size == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, "size is 0");
        std::lock_guard lock(d->mutex);
        if (size > kTotalMemory - d->used)
            return Error(KEEL_STATUS_OUT_OF_MEMORY, std::to_string(size) + " bytes do not fit; " +
                                                        std::to_string(kTotalMemory - d->used) +
                                                        " bytes free on " + d->name);
        std::uint64_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
        void* p = std::aligned_alloc(kAlignment, rounded);
        if (p == nullptr) return Error(KEEL_STATUS_OUT_OF_MEMORY, "host memory exhausted");
        d->allocations[reinterpret_cast<std::uint64_t>(p)] = size;
        d->used += size;
        *out = reinterpret_cast<std::uint64_t>(p);
        return ok();
    });
}

keel_error* device_free(keel_device d, keel_device_addr addr) {
    return entry(fake_build.type, "device_free", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("device_free"));
        KEEL_TRY(keel::plugin::require_non_null(d, "device"));
        std::lock_guard lock(d->mutex);
        auto it = d->allocations.find(addr);
        if (it == d->allocations.end())
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         hex(addr) + " is not an allocation of " + d->name);
        d->used -= it->second;
        d->allocations.erase(it);
        std::free(reinterpret_cast<void*>(addr));
        return ok();
    });
}

keel_error* memcpy_h2d(keel_stream s, keel_device_addr dst, const void* src, std::uint64_t size) {
    return entry(fake_build.type, "memcpy_h2d", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("memcpy_h2d"));
        KEEL_TRY(require_stream(s));
        KEEL_TRY(keel::plugin::require_non_null(src, "src"));
        KEEL_TRY(s->device->check_range(dst, size, "destination"));
        s->worker->push([dst, src, size] { std::memcpy(reinterpret_cast<void*>(dst), src, size); });
        return ok();
    });
}

keel_error* memcpy_d2h(keel_stream s, void* dst, keel_device_addr src, std::uint64_t size) {
    return entry(fake_build.type, "memcpy_d2h", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("memcpy_d2h"));
        KEEL_TRY(require_stream(s));
        KEEL_TRY(keel::plugin::require_non_null(static_cast<const void*>(dst), "dst"));
        KEEL_TRY(s->device->check_range(src, size, "source"));
        s->worker->push([dst, src, size] {
            std::memcpy(dst, reinterpret_cast<const void*>(src), size);
        });
        return ok();
    });
}

keel_error* memcpy_d2d(keel_stream s, keel_device_addr dst, keel_device_addr src, std::uint64_t size) {
    return entry(fake_build.type, "memcpy_d2d", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("memcpy_d2d"));
        KEEL_TRY(require_stream(s));
        KEEL_TRY(s->device->check_range(src, size, "source"));
        KEEL_TRY(s->device->check_range(dst, size, "destination"));
        s->worker->push([dst, src, size] {
            std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), size);
        });
        return ok();
    });
}

keel_error* memset_d8(keel_stream s, keel_device_addr dst, std::uint8_t value, std::uint64_t size) {
    return entry(fake_build.type, "memset_d8", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("memset_d8"));
        KEEL_TRY(require_stream(s));
        KEEL_TRY(s->device->check_range(dst, size, "destination"));
        s->worker->push([dst, value, size] { std::memset(reinterpret_cast<void*>(dst), value, size); });
        return ok();
    });
}

keel_error* memcpy_h2d_inline(keel_stream s, keel_device_addr dst, const void* src,
                              std::uint64_t size) {
    return entry(fake_build.type, "memcpy_h2d_inline", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("memcpy_h2d_inline"));
        KEEL_TRY(require_stream(s));
        KEEL_TRY(keel::plugin::require_non_null(src, "src"));
        if (size > KEEL_INLINE_COPY_MAX)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, std::to_string(size) + " bytes is more than " +
                                                           std::to_string(KEEL_INLINE_COPY_MAX));
        KEEL_TRY(s->device->check_range(dst, size, "destination"));
        std::array<std::uint8_t, KEEL_INLINE_COPY_MAX> captured{};
        std::memcpy(captured.data(), src, size);
        s->worker->push([dst, captured, size] {
            std::memcpy(reinterpret_cast<void*>(dst), captured.data(), size);
        });
        return ok();
    });
}

keel_error* device_memory_info(keel_device d, std::uint64_t* out_free, std::uint64_t* out_total) {
    return entry(fake_build.type, "device_memory_info", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("device_memory_info"));
        KEEL_TRY(keel::plugin::require_non_null(d, "device"));
        std::lock_guard lock(d->mutex);
        *out_free = kTotalMemory - d->used;
        *out_total = kTotalMemory;
        return ok();
    });
}

keel_error* host_alloc(keel_device d, std::uint64_t size, void** out) {
    return entry(fake_build.type, "host_alloc", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("host_alloc"));
        KEEL_TRY(keel::plugin::require_non_null(d, "device"));
        if (size == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, "size is 0");
        void* p = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
        if (p == nullptr) return Error(KEEL_STATUS_OUT_OF_MEMORY, "host memory exhausted");
        std::lock_guard lock(d->mutex);
        d->host_allocations.insert(p);
        *out = p;
        return ok();
    });
}

keel_error* host_free(keel_device d, void* ptr) {
    return entry(fake_build.type, "host_free", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("host_free"));
        KEEL_TRY(keel::plugin::require_non_null(d, "device"));
        std::lock_guard lock(d->mutex);
        if (d->host_allocations.erase(ptr) == 0)
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         hex(reinterpret_cast<std::uint64_t>(ptr)) + " is not pinned memory of " + d->name);
        std::free(ptr);
        return ok();
    });
}

keel_error* kernel_get(keel_device d, const char* name, keel_kernel* out) {
    return entry(fake_build.type, "kernel_get", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("kernel_get"));
        KEEL_TRY(keel::plugin::require_non_null(d, "device"));
        KEEL_TRY(keel::plugin::require_non_null(name, "name"));
        for (keel_kernel_t& k : g_kernels)
            if (std::strcmp(k.name, name) == 0) {
                *out = &k;
                return ok();
            }
        return Error(KEEL_STATUS_NOT_FOUND, std::string("no kernel named '") + name +
                                                "' (kernels: fill, axpy)");
    });
}

keel_error* kernel_launch(keel_stream s, keel_kernel k, const keel_launch_args* launch) {
    return entry(fake_build.type, "kernel_launch", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("kernel_launch"));
        KEEL_TRY(require_stream(s));
        KEEL_TRY(keel::plugin::require_non_null(k, "kernel"));
        KEEL_TRY_ASSIGN(auto args, keel::plugin::LaunchArgsView::make(launch, k->name));
        KEEL_TRY_ASSIGN(Worker::Task task, k->prepare(s->device, args));
        s->worker->push(std::move(task));
        return ok();
    });
}

// A plugin-defined kind: the fake has no driver, so it names its own objects.
constexpr keel_native_handle_kind kFakeHandleKind =
    static_cast<keel_native_handle_kind>(KEEL_NATIVE_HANDLE_PLUGIN_DEFINED + 7);


keel_error* device_native_handle(keel_device d, keel_native_handle* out) {
    return entry(fake_build.type, "device_native_handle", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("device_native_handle"));
        KEEL_TRY(keel::plugin::require_non_null(d, "device"));
        return keel::plugin::write_native_handle(out, kFakeHandleKind, 1000 + d->index);
    });
}

keel_error* stream_native_handle(keel_stream s, keel_native_handle* out) {
    return entry(fake_build.type, "stream_native_handle", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("stream_native_handle"));
        KEEL_TRY(require_stream_handle(s));
        return keel::plugin::write_native_handle(out, kFakeHandleKind,
                                                 reinterpret_cast<std::uintptr_t>(s->worker.get()));
    });
}

// The settings the fake takes as options (a variant of 1.6 or later).
constexpr keel::plugin::OptionSpec kOptionSpecs[] = {
    {"fail", keel::env::Var::test_fake_fail},
    {"inline", keel::env::Var::test_fake_inline},
    {"plugin_log", keel::env::Var::test_fake_plugin_log},
};

keel_error* plugin_option_info(std::uint32_t index, keel_option_info* out) {
    return entry(fake_build.type, "plugin_option_info", [&]() -> Result<void> {
        KEEL_TRY(injected_failure("plugin_option_info"));
        return g_state->options.describe(index, out);
    });
}

}  // namespace
#include "fake_comm.hpp"
namespace {

// An entry the runtime must never call (it lies beyond a short table).

template <class Fn>
struct NeverCalled;
template <class R, class... A>
struct NeverCalled<R (*)(A...)> {
    static R call(A...) {
        std::fputs("fake plugin: an entry beyond struct_size was called\n", stderr);
        std::abort();
    }
};

constexpr std::size_t keel_plugin_api_size_of_minor(unsigned minor) {
    switch (minor) {
        case 0: return KEEL_PLUGIN_API_STRUCT_SIZE_1_0;
        case 1: return KEEL_PLUGIN_API_STRUCT_SIZE_1_1;
        case 2: return KEEL_PLUGIN_API_STRUCT_SIZE_1_2;
        case 3: return KEEL_PLUGIN_API_STRUCT_SIZE_1_3;
        case 4: return KEEL_PLUGIN_API_STRUCT_SIZE_1_4;
        case 5: return KEEL_PLUGIN_API_STRUCT_SIZE_1_5;
        default: return KEEL_PLUGIN_API_STRUCT_SIZE_1_6;
    }
}

void fill_table(keel_plugin_api& t) {
    t = keel_plugin_api{};
    t.struct_size = KEEL_PLUGIN_API_STRUCT_SIZE;
    t.abi_major = KEEL_ABI_VERSION_MAJOR;
    t.abi_minor = KEEL_ABI_VERSION_MINOR;
    t.plugin_info = &plugin_info;
    t.plugin_shutdown = &plugin_shutdown;
    t.device_count = &device_count;
    t.device_get = &device_get;
    t.device_properties = &device_properties;
    t.stream_create = &stream_create;
    t.stream_destroy = &stream_destroy;
    t.stream_synchronize = &stream_synchronize;
    t.stream_query = &stream_query;
    t.stream_wait_event = &stream_wait_event;
    t.stream_enqueue_host_func = &stream_enqueue_host_func;
    t.event_create = &event_create;
    t.event_destroy = &event_destroy;
    t.event_record = &event_record;
    t.event_query = &event_query;
    t.event_synchronize = &event_synchronize;
    t.device_alloc = &device_alloc;
    t.device_free = &device_free;
    t.memcpy_h2d = &memcpy_h2d;
    t.memcpy_d2h = &memcpy_d2h;
    t.memcpy_d2d = &memcpy_d2d;
    t.memset_d8 = &memset_d8;
    t.device_memory_info = &device_memory_info;
    t.host_alloc = &host_alloc;
    t.host_free = &host_free;
    t.event_elapsed_time = &event_elapsed_time;
    t.kernel_get = &kernel_get;
    t.kernel_launch = &kernel_launch;
    t.memcpy_h2d_inline = &memcpy_h2d_inline;
    t.device_native_handle = &device_native_handle;
    t.stream_native_handle = &stream_native_handle;
    t.plugin_option_info = &plugin_option_info;
    switch (fake_build.variant) {
        case Variant::wrong_major:
            // Ignores the negotiation and answers with another major's table.
            t.abi_major = KEEL_ABI_VERSION_MAJOR + 1;
            break;
        case Variant::missing_required:
            t.device_free = nullptr;
            break;
        case Variant::old_minor:
            // As a minimal plugin built against 1.0: the table ends after the
            // required entries. What lies beyond must never be read, so it aborts.
            t.abi_minor = 0;
            t.struct_size = KEEL_API_ENTRY_END(memset_d8);
#define KEEL_FAKE_POISON(e) t.e = &NeverCalled<decltype(t.e)>::call
            KEEL_FAKE_POISON(device_memory_info);
            KEEL_FAKE_POISON(host_alloc);
            KEEL_FAKE_POISON(host_free);
            KEEL_FAKE_POISON(event_elapsed_time);
            KEEL_FAKE_POISON(kernel_get);
            KEEL_FAKE_POISON(kernel_launch);
            KEEL_FAKE_POISON(memcpy_h2d_inline);
            KEEL_FAKE_POISON(device_native_handle);
            KEEL_FAKE_POISON(stream_native_handle);
            KEEL_FAKE_POISON(plugin_option_info);
#undef KEEL_FAKE_POISON
            break;
        case Variant::minimum_of_minor: {
            t.abi_minor = fake_build.minor;
            t.struct_size = keel_plugin_api_size_of_minor(fake_build.minor);
            const keel_plugin_api required = t;
            t = keel_plugin_api{};
            std::memcpy(&t, &required, KEEL_API_ENTRY_END(memset_d8));
            break;
        }
        case Variant::comm:
            fake_comm::fill(t);
            break;
        case Variant::newer_minor:
            // As a plugin built against the next minor: two more entries that
            // this runtime does not know and must never call.
            t.abi_minor = KEEL_ABI_VERSION_MINOR + 1;
            t.struct_size = sizeof(ExtendedTable);
            g_extended.future_entry_a = &NeverCalled<decltype(g_extended.future_entry_a)>::call;
            g_extended.future_entry_b = &NeverCalled<decltype(g_extended.future_entry_b)>::call;
            break;
        case Variant::good:
        case Variant::no_entry:
        case Variant::init_fails:
        case Variant::duplicate:
        case Variant::type_mismatch:
            break;
    }
}

keel_error* init(const keel_host_services* host, const keel_plugin_api** out_api) {
    return entry(fake_build.type, "keel_plugin_init", [&]() -> Result<void> {
        KEEL_TRY(keel::plugin::require_non_null(host, "host"));
        KEEL_TRY(keel::plugin::require_non_null(out_api, "out_api"));
        if (host->abi_major != KEEL_ABI_VERSION_MAJOR)
            return Error(KEEL_STATUS_VERSION_MISMATCH,
                         "runtime offers ABI " + std::to_string(host->abi_major) + ", plugin implements " +
                             std::to_string(KEEL_ABI_VERSION_MAJOR));
        if (fake_build.variant == Variant::init_fails)
            return Error(KEEL_STATUS_UNAVAILABLE, "simulated initialisation failure (no driver)");
        fill_table(g_table);
        // A variant of an older minor cannot see options (keel.h
        // [options.read-at-init]): it reads its variables only.
        const std::span<const keel::plugin::OptionSpec> specs(kOptionSpecs);
        keel_host_services no_options{};
        const bool takes_options = g_table.abi_minor >= 6;
        KEEL_TRY_ASSIGN(keel::plugin::Options options,
                        keel::plugin::Options::read(takes_options ? host : &no_options, specs));
        failing_entry() = std::string(options.text("fail").value_or(""));
        KEEL_TRY(injected_failure("keel_plugin_init"));
        KEEL_TRY_ASSIGN(const std::optional<bool> run_inline, options.flag("inline"));
        keel::plugin::HostLog::install(host);
        g_state = std::make_unique<PluginState>();
        if (const auto log = options.text("plugin_log")) g_state->log_path = *log;
        g_state->options = std::move(options);
        for (std::uint32_t i = 0; i < kDeviceCount; ++i) {
            g_state->devices[i].index = i;
            g_state->devices[i].name = (std::string(fake_build.type) + ":") + std::to_string(i);
        }
        g_run_inline.store(run_inline.value_or(false));
        trace("init");
        keel::plugin::HostLog::write(KEEL_LOG_DEBUG, "[" + std::string(fake_build.type) + "] initialised");
        *out_api = &g_table;
        return ok();
    });
}

}  // namespace

keel_error* keel_fake::plugin_init(const keel_host_services* host, const keel_plugin_api** out_api) {
    return init(host, out_api);
}
