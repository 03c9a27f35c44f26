#include "trace/hooks.hpp"

#include <keel/stream.hpp>
#include <keel/trace.hpp>

#include <algorithm>

#include "access.hpp"
#include "logging.hpp"
#include "memory/memory_core.hpp"
#include "memory/stream_registry.hpp"
#include "plugin.hpp"
#include "trace/event_times.hpp"
#include "trace/session.hpp"

namespace keel::trace {

namespace {

// The stream's id (its generation) and, once per session, its name.
std::uint64_t stream_id(const Stream& stream) noexcept {
    const std::uint64_t id = detail::Access::generation(stream);
    try {
        name_stream(detail::Access::trace_seen(stream), id, stream.device().name());
    } catch (...) {
        // Out of host memory: the track goes unnamed.
    }
    return id;
}

thread_local bool t_last_cache_hit = false;

}  // namespace

void OpScope::begin(const Stream& stream, Kind kind, std::uint64_t bytes, const char* name,
                    const OpInfo* info) noexcept {
    if (stream.empty()) return;
    Record* r = append(kind);
    if (r == nullptr) return;
    r->bytes = bytes;
    r->name = name;
    if (info != nullptr) {
        if (!info->interned_name.empty()) {
            try {
                r->name = intern(info->interned_name);
            } catch (...) {
            }
        }
        r->detail = info->category;
        r->a = info->a;
        r->b = info->b;
    }
    r->stream = stream_id(stream);
    publish(r);
    record_ = r;
    api_ = &detail::Access::slot(stream.device()).api();
    stream_ = detail::Access::handle(stream);
    if (device_times()) {
        if (StreamTimes* times = stream_times(stream); times != nullptr && times->start(r)) {
            times_ = times;
            return;
        }
        marks_pending(r, 1);
        if (!api_->stream_enqueue_host_func(stream_, &mark_start, r).ok()) mark_dropped(r);
    }
}

void OpScope::end(Record* r, const detail::PluginApi* api, keel_stream stream, StreamTimes* times) noexcept {
    r->host_end_ns.store(now_ns(), std::memory_order_relaxed);
    if (!device_times() || api == nullptr) return;
    if (times != nullptr && times->end(r)) return;
    marks_pending(r, 1);
    if (Result<void> enqueued = api->stream_enqueue_host_func(stream, &mark_end, r); !enqueued.ok()) {
        // A failed stream refuses the mark: its error is the operation's status.
        r->status.store(enqueued.error().code(), std::memory_order_relaxed);
        mark_dropped(r);
    }
}

WaitScope::WaitScope(const char* what, const Stream& stream) noexcept {
    if (on()) [[unlikely]] {
        start_ = now_ns();
        what_ = what;
        stream_ = stream.empty() ? 0 : stream_id(stream);
    }
}

void WaitScope::end() noexcept {
    Record* r = append(Kind::host_wait);
    if (r == nullptr) return;
    r->host_ns = start_;
    r->host_end_ns.store(now_ns(), std::memory_order_relaxed);
    r->name = what_;
    r->b = stream_;
    publish(r);
}

namespace {

void memory_instant(Kind kind, keel_stream stream, std::uint64_t bytes, keel_device_addr addr,
                    std::uint8_t flags) noexcept {
    Record* r = append(kind);
    if (r == nullptr) return;
    r->stream = memory::stream_generation(stream);
    r->bytes = bytes;
    r->a = addr;
    r->flags = flags;
    publish(r);
}

// The device's allocated bytes after `delta`, and its reserved bytes.
void memory_changed(memory::MemoryCore& core, std::int64_t delta) noexcept {
    memory::MemoryCore::TracedBytes& t = core.traced();
    const std::uint32_t session = current_session();
    std::int64_t allocated = 0;
    if (t.session.load(std::memory_order_acquire) != session) {
        // First event of the session: the allocator's exact figure (which
        // includes this change). Two threads may both take it: same figure.
        try {
            allocated = static_cast<std::int64_t>(core.allocator().stats().allocated_bytes);
        } catch (...) {
            return;
        }
        t.allocated.store(allocated, std::memory_order_relaxed);
        t.session.store(session, std::memory_order_release);
    } else {
        allocated = t.allocated.fetch_add(delta, std::memory_order_relaxed) + delta;
    }
    Record* r = append(Kind::memory_counter);
    if (r == nullptr) return;
    try {
        r->detail = intern(core.device() != nullptr ? std::string_view(core.device()->name) : std::string_view("device"));
    } catch (...) {
        r->detail = "?";
    }
    r->a = static_cast<std::uint64_t>(std::max<std::int64_t>(allocated, 0));
    r->b = core.allocator().reserved_bytes();
    publish(r);
}

}  // namespace

void allocation(memory::MemoryCore& core, keel_stream stream, std::uint64_t bytes, keel_device_addr addr) noexcept {
    memory_instant(Kind::alloc, stream, bytes, addr, last_cache_hit() ? kFlagCacheHit : kFlagCacheMiss);
    memory_changed(core, static_cast<std::int64_t>(bytes));
}

void deallocation(memory::MemoryCore& core, keel_stream stream, std::uint64_t bytes, keel_device_addr addr,
                  bool pending) noexcept {
    memory_instant(Kind::free, stream, bytes, addr, pending ? kFlagPending : 0);
    memory_changed(core, -static_cast<std::int64_t>(bytes));
}

void record_stream(keel_stream stream, std::uint64_t bytes, keel_device_addr addr) noexcept {
    memory_instant(Kind::record_stream, stream, bytes, addr, 0);
}

void free_settled(std::uint64_t stream_id, std::uint64_t bytes, keel_device_addr addr) noexcept {
    Record* r = append(Kind::free_settled);
    if (r == nullptr) return;
    r->stream = stream_id;
    r->bytes = bytes;
    r->a = addr;
    publish(r);
}

void hold_released(keel_stream stream, std::int64_t held_ns) noexcept {
    if (!on()) return;
    Record* r = append(Kind::hold_release);
    if (r == nullptr) return;
    r->stream = memory::stream_generation(stream);
    r->b = static_cast<std::uint64_t>(held_ns);
    publish(r);
}

void note_cache_hit(bool hit) noexcept { t_last_cache_hit = hit; }
bool last_cache_hit() noexcept { return t_last_cache_hit; }

}  // namespace keel::trace

namespace keel {

bool tracing() noexcept { return trace::on(); }

Result<Trace> Trace::start(TraceOptions options) {
    trace::SessionOptions s;
    s.path = trace::resolve_path(options.path);
    s.device_times = options.device_times;
    if (options.path.empty()) s.path.clear();
    KEEL_TRY(trace::registry().start(std::move(s)));
    Trace t;
    t.active_ = true;
    return t;
}

Trace::Trace(Trace&& other) noexcept : active_(std::exchange(other.active_, false)) {}

Trace& Trace::operator=(Trace&& other) noexcept {
    if (this != &other) {
        if (active_) {
            if (auto r = stop(); !r) detail::log_warn(r.error().message());
        }
        active_ = std::exchange(other.active_, false);
    }
    return *this;
}

Trace::~Trace() {
    if (active_) {
        if (auto r = stop(); !r) detail::log_warn(r.error().message());
    }
}

Result<TraceReport> Trace::stop() {
    if (!active_) return Error(KEEL_STATUS_FAILED_PRECONDITION, "[Trace::stop] the session was stopped already");
    active_ = false;
    return trace::registry().stop();
}

TraceRange::TraceRange(const Stream& stream, const char* category, const char* name, TraceRangeInfo info) noexcept {
    if (!trace::on()) [[likely]] return;
    trace::OpInfo extra;
    extra.category = category;
    extra.a = static_cast<std::uint64_t>(info.rank);
    extra.b = static_cast<std::uint64_t>(info.peer);
    trace::OpScope scope(stream, trace::Kind::range, info.bytes, name, extra);
    record_ = scope.release();
    stream_ = &stream;
}

TraceRange::~TraceRange() {
    if (record_ == nullptr) return;
    if (stream_->empty()) {
        static_cast<trace::Record*>(record_)->host_end_ns.store(trace::now_ns(), std::memory_order_relaxed);
        return;
    }
    trace::OpScope::end(static_cast<trace::Record*>(record_), &detail::Access::slot(stream_->device()).api(),
                        detail::Access::handle(*stream_), trace::stream_times(*stream_));
}

}  // namespace keel
