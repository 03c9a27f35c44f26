#include "fake_device.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace keel::memory::testing {

namespace {

std::string hex(std::uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

Error invalid(const std::string& msg) { return Error(KEEL_STATUS_INVALID_ARGUMENT, "[fake] " + msg); }

}  // namespace

FakeDevice::FakeDevice(Options options) : options_(options) {}

FakeDevice::~FakeDevice() = default;

keel_stream FakeDevice::make_stream() {
    std::lock_guard lock(mu_);
    streams_.push_back(std::make_unique<Stream>());
    return reinterpret_cast<keel_stream>(streams_.back().get());
}

FakeDevice::Stream* FakeDevice::stream_of(keel_stream s) {
    for (auto& p : streams_)
        if (reinterpret_cast<keel_stream>(p.get()) == s) return p.get();
    return nullptr;
}

FakeDevice::Event* FakeDevice::event_of(keel_event e) {
    auto it = events_.find(e);
    return it == events_.end() ? nullptr : it->second.get();
}

bool FakeDevice::event_done(const Event& e) const {
    return e.stream == nullptr || e.stream->completed >= e.position;
}

void FakeDevice::execute(Op& op) {
    switch (op.kind) {
        case OpKind::h2d:
            // Reads the host source now, as a real device does.
            std::memcpy(bytes_at(op.lo, op.hi - op.lo), op.src, op.hi - op.lo);
            break;
        case OpKind::h2d_inline:
            std::memcpy(bytes_at(op.lo, op.hi - op.lo), op.inline_bytes.data(), op.hi - op.lo);
            break;
        case OpKind::d2h: std::memcpy(op.dst, bytes_at(op.lo, op.hi - op.lo), op.hi - op.lo); break;
        default: break;
    }
}

bool FakeDevice::complete_locked(Stream& s, std::size_t target, bool cascade) {
    target = std::min(target, s.ops.size());
    while (s.completed < target) {
        if (s.stuck) return false;
        Op& op = s.ops[s.completed];
        if (op.kind == OpKind::wait && op.wait_stream->completed < op.wait_position) {
            if (!cascade) return false;
            auto* other = const_cast<Stream*>(op.wait_stream);
            if (!complete_locked(*other, op.wait_position, true)) return false;
        }
        execute(op);
        ++s.completed;
    }
    return true;
}

void FakeDevice::complete(keel_stream stream, std::size_t n) {
    std::lock_guard lock(mu_);
    Stream* s = stream_of(stream);
    if (s == nullptr) return;
    const std::size_t target = n > s->ops.size() - s->completed ? s->ops.size() : s->completed + n;
    complete_locked(*s, target, false);
}

void FakeDevice::complete_all() {
    std::lock_guard lock(mu_);
    bool progress = true;
    while (progress) {
        progress = false;
        for (auto& s : streams_) {
            const std::size_t before = s->completed;
            complete_locked(*s, s->ops.size(), false);
            progress = progress || s->completed != before;
        }
    }
}

void FakeDevice::set_stuck(keel_stream stream, bool stuck) {
    std::lock_guard lock(mu_);
    if (Stream* s = stream_of(stream)) s->stuck = stuck;
}

std::size_t FakeDevice::unfinished(keel_stream stream) {
    std::lock_guard lock(mu_);
    Stream* s = stream_of(stream);
    return s == nullptr ? 0 : s->ops.size() - s->completed;
}

std::vector<std::string> FakeDevice::violations() {
    std::lock_guard lock(mu_);
    return violations_;
}

void FakeDevice::clear_violations() {
    std::lock_guard lock(mu_);
    violations_.clear();
}

FakeDevice::Counters FakeDevice::counters() {
    std::lock_guard lock(mu_);
    return counters_;
}

std::uint8_t* FakeDevice::bytes_at(keel_device_addr addr, std::uint64_t size) {
    auto it = allocations_.upper_bound(addr);
    if (it == allocations_.begin()) return nullptr;
    --it;
    if (addr + size > it->first + it->second.size()) return nullptr;
    return it->second.data() + (addr - it->first);
}

std::vector<std::uint8_t> FakeDevice::read(keel_device_addr addr, std::uint64_t size) {
    std::lock_guard lock(mu_);
    const std::uint8_t* p = bytes_at(addr, size);
    if (p == nullptr) return {};
    return std::vector<std::uint8_t>(p, p + size);
}

void FakeDevice::check_hazards(const Stream& s, keel_device_addr lo, keel_device_addr hi) {
    for (auto& other : streams_) {
        if (other.get() == &s) continue;
        auto known = s.clock.find(other.get());
        const std::size_t ordered = known == s.clock.end() ? 0 : known->second;
        for (std::size_t i = std::max(other->completed, ordered); i < other->ops.size(); ++i) {
            const Op& op = other->ops[i];
            if (op.kind == OpKind::wait || op.kind == OpKind::marker) continue;
            if (op.lo < hi && lo < op.hi)
                violations_.push_back("hazard: access to [" + hex(lo) + ", " + hex(hi) +
                                      ") races an unfinished access to [" + hex(op.lo) + ", " +
                                      hex(op.hi) + ") on another stream");
        }
    }
    if (bytes_at(lo, hi - lo) == nullptr)
        violations_.push_back("access to [" + hex(lo) + ", " + hex(hi) + ") outside any allocation");
}

void FakeDevice::enqueue(Stream& s, Op op) {
    if (op.kind != OpKind::wait && op.kind != OpKind::marker) check_hazards(s, op.lo, op.hi);
    s.ops.push_back(std::move(op));
    if (options_.immediate) complete_locked(s, s.ops.size(), true);
}

void FakeDevice::enqueue_access(keel_stream stream, keel_device_addr addr, std::uint64_t size) {
    std::lock_guard lock(mu_);
    Stream* s = stream_of(stream);
    Op op;
    op.kind = OpKind::access;
    op.lo = addr;
    op.hi = addr + size;
    enqueue(*s, std::move(op));
}

void FakeDevice::enqueue_work(keel_stream stream) {
    std::lock_guard lock(mu_);
    enqueue(*stream_of(stream), Op{});
}

Result<keel_device_addr> FakeDevice::device_alloc(std::uint64_t size) {
    std::lock_guard lock(mu_);
    if (size == 0) return invalid("device_alloc of 0 bytes");
    if (counters_.live_device_bytes + size > options_.capacity)
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[fake device_alloc] out of memory: " +
                                                    std::to_string(size) + " bytes requested, " +
                                                    std::to_string(options_.capacity -
                                                                   counters_.live_device_bytes) +
                                                    " free");
    const keel_device_addr addr = next_addr_;
    next_addr_ += (size + options_.alignment - 1) / options_.alignment * options_.alignment +
                  options_.alignment;
    allocations_.emplace(addr, std::vector<std::uint8_t>(size, 0xAB));
    counters_.live_device_bytes += size;
    ++counters_.device_allocs;
    return addr;
}

Result<void> FakeDevice::device_free(keel_device_addr addr) {
    std::lock_guard lock(mu_);
    auto it = allocations_.find(addr);
    if (it == allocations_.end()) return invalid("device_free of unknown address " + hex(addr));
    const keel_device_addr hi = addr + it->second.size();
    for (auto& s : streams_)
        for (std::size_t i = s->completed; i < s->ops.size(); ++i) {
            const Op& op = s->ops[i];
            if (op.kind == OpKind::wait || op.kind == OpKind::marker || !(op.lo < hi && addr < op.hi))
                continue;
            const std::string msg =
                "late free: device_free(" + hex(addr) + ") while an unfinished operation uses it";
            if (options_.refuse_late_free) return Error(KEEL_STATUS_FAILED_PRECONDITION, "[fake] " + msg);
            violations_.push_back(msg);
        }
    counters_.live_device_bytes -= it->second.size();
    allocations_.erase(it);
    ++counters_.device_frees;
    return ok();
}

Result<void*> FakeDevice::host_alloc(std::uint64_t size) {
    std::lock_guard lock(mu_);
    if (host_blocks_.size() >= options_.max_live_host_blocks)
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[fake host_alloc] pinned memory exhausted");
    auto block = std::make_unique<std::uint8_t[]>(size);
    void* p = block.get();
    host_blocks_.emplace(p, std::move(block));
    ++counters_.host_allocs;
    return p;
}

Result<void> FakeDevice::host_free(void* ptr) {
    std::lock_guard lock(mu_);
    if (host_blocks_.erase(ptr) == 0) return invalid("host_free of unknown pointer");
    ++counters_.host_frees;
    return ok();
}

Result<keel_event> FakeDevice::event_create() {
    std::lock_guard lock(mu_);
    auto event = std::make_unique<Event>();
    auto handle = reinterpret_cast<keel_event>(event.get());
    events_.emplace(handle, std::move(event));
    ++counters_.events_created;
    ++counters_.events_live;
    return handle;
}

Result<void> FakeDevice::event_destroy(keel_event event) {
    std::lock_guard lock(mu_);
    if (events_.erase(event) == 0) return invalid("event_destroy of unknown event");
    --counters_.events_live;
    return ok();
}

Result<void> FakeDevice::event_record(keel_event event, keel_stream stream) {
    std::lock_guard lock(mu_);
    Event* e = event_of(event);
    Stream* s = stream_of(stream);
    if (e == nullptr || s == nullptr) return invalid("event_record with an unknown handle");
    e->stream = s;
    e->position = s->ops.size();
    e->clock = s->clock;
    ++counters_.event_records;
    return ok();
}

Result<bool> FakeDevice::event_query(keel_event event) {
    std::lock_guard lock(mu_);
    Event* e = event_of(event);
    if (e == nullptr) return invalid("event_query of unknown event");
    if (options_.failing_event_query)
        return Error(KEEL_STATUS_DEVICE_ERROR, "[fake event_query] failing as configured");
    return event_done(*e);
}

Result<void> FakeDevice::event_synchronize(keel_event event) {
    std::lock_guard lock(mu_);
    Event* e = event_of(event);
    if (e == nullptr) return invalid("event_synchronize of unknown event");
    ++counters_.host_syncs;
    if (event_done(*e)) return ok();
    // The host waiting lets the device run up to the event.
    if (!complete_locked(*const_cast<Stream*>(e->stream), e->position, true)) {
        violations_.push_back("host blocked on an event of a stuck stream");
        return Error(KEEL_STATUS_DEVICE_ERROR, "[fake event_synchronize] stream is stuck");
    }
    return ok();
}

Result<void> FakeDevice::stream_wait_event(keel_stream stream, keel_event event) {
    std::lock_guard lock(mu_);
    Event* e = event_of(event);
    Stream* s = stream_of(stream);
    if (e == nullptr || s == nullptr) return invalid("stream_wait_event with an unknown handle");
    ++counters_.stream_waits;
    if (e->stream == nullptr) return ok();
    // Ordered after everything the event captured, transitively.
    for (const auto& [other, n] : e->clock) s->clock[other] = std::max(s->clock[other], n);
    s->clock[e->stream] = std::max(s->clock[e->stream], e->position);
    Op op;
    op.kind = OpKind::wait;
    op.wait_stream = e->stream;
    op.wait_position = e->position;
    enqueue(*s, std::move(op));
    return ok();
}

Result<void> FakeDevice::stream_synchronize(keel_stream stream) {
    std::lock_guard lock(mu_);
    Stream* s = stream_of(stream);
    if (s == nullptr) return invalid("stream_synchronize of unknown stream");
    ++counters_.host_syncs;
    if (!complete_locked(*s, s->ops.size(), true)) {
        violations_.push_back("host blocked on a stuck stream");
        return Error(KEEL_STATUS_DEVICE_ERROR, "[fake stream_synchronize] stream is stuck");
    }
    return ok();
}

Result<bool> FakeDevice::stream_query(keel_stream stream) {
    std::lock_guard lock(mu_);
    Stream* s = stream_of(stream);
    if (s == nullptr) return invalid("stream_query of unknown stream");
    return s->completed >= s->ops.size();
}

Result<void> FakeDevice::stage_pageable(Op& op, const void* host) {
    op.pageable = host_blocks_.count(const_cast<void*>(host)) == 0;
    if (!op.pageable || options_.max_pageable_copies_in_flight == UINT64_MAX) return ok();
    std::uint64_t in_flight = 0;
    for (const auto& s : streams_)
        for (std::size_t i = s->completed; i < s->ops.size(); ++i) in_flight += s->ops[i].pageable ? 1 : 0;
    if (in_flight < options_.max_pageable_copies_in_flight) return ok();
    ++counters_.refused_pageable_copies;
    return Error(KEEL_STATUS_OUT_OF_MEMORY, "[fake memcpy] staging for pageable memory all in use");
}

Result<void> FakeDevice::memcpy_h2d(keel_stream stream, keel_device_addr dst, const void* src,
                                    std::uint64_t size) {
    std::lock_guard lock(mu_);
    Stream* s = stream_of(stream);
    if (s == nullptr || src == nullptr) return invalid("memcpy_h2d with a null handle");
    Op op;
    op.kind = OpKind::h2d;
    op.lo = dst;
    op.hi = dst + size;
    op.src = src;
    KEEL_TRY(stage_pageable(op, src));
    ++counters_.h2d;
    enqueue(*s, std::move(op));
    return ok();
}

Result<void> FakeDevice::memcpy_d2h(keel_stream stream, void* dst, keel_device_addr src,
                                    std::uint64_t size) {
    std::lock_guard lock(mu_);
    Stream* s = stream_of(stream);
    if (s == nullptr || dst == nullptr) return invalid("memcpy_d2h with a null handle");
    Op op;
    op.kind = OpKind::d2h;
    op.lo = src;
    op.hi = src + size;
    op.dst = dst;
    KEEL_TRY(stage_pageable(op, dst));
    ++counters_.d2h;
    enqueue(*s, std::move(op));
    return ok();
}

Result<void> FakeDevice::memcpy_h2d_inline(keel_stream stream, keel_device_addr dst,
                                           const void* src, std::uint64_t size) {
    std::lock_guard lock(mu_);
    Stream* s = stream_of(stream);
    if (s == nullptr || src == nullptr) return invalid("memcpy_h2d_inline with a null handle");
    if (size > KEEL_INLINE_COPY_MAX) return invalid("inline copy too large");
    ++counters_.inline_h2d;
    Op op;
    op.kind = OpKind::h2d_inline;
    op.lo = dst;
    op.hi = dst + size;
    const auto* bytes = static_cast<const std::uint8_t*>(src);
    op.inline_bytes.assign(bytes, bytes + size);
    enqueue(*s, std::move(op));
    return ok();
}

}  // namespace keel::memory::testing
