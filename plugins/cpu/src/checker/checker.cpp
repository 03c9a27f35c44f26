#include "checker.hpp"

#include "../address_space.hpp"
#include "../device_memories.hpp"
#include "../kernel_registry.hpp"
#include "../pinned_memory.hpp"
#include "../stream.hpp"
#include "annotations.hpp"
#include "guarded_pages.hpp"
#include "host_memory.hpp"

#include <keel/plugin/host_log.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace keel::cpu {
namespace {

std::string range_text(std::uint64_t begin, std::uint64_t size) {
    return "[" + hex(begin) + ", +" + std::to_string(size) + " bytes)";
}

const char* verb(bool write) { return write ? "writes" : "reads"; }

}  // namespace

Checker::Checker(const CheckerConfig& config, const DeviceMemories& memory, const PinnedMemory& pinned)
    : config_(config), memory_(memory), pinned_(pinned), alloc_rng_(config.seed) {}

Checker::~Checker() {
    auto lock = this->lock();
    release_destinations(lock, 0, UINTPTR_MAX);
    lock.unlock();
    guarded_pages::remove_handler_if_unused();
}

Result<void> Checker::before_alloc(const char* kind) {
    std::lock_guard lock(mutex_);
    std::int64_t& count = allocs_[std::strcmp(kind, "pinned") == 0 ? 1 : 0];
    if (config_.fail_alloc_after >= 0 && count >= config_.fail_alloc_after)
        return Error(KEEL_STATUS_OUT_OF_MEMORY,
                     std::string("injected ") + kind + " allocation failure (KEEL_CPU_FAIL_ALLOC_AFTER=" +
                         std::to_string(config_.fail_alloc_after) + ")");
    if (config_.fail_alloc_prob > 0.0 &&
        std::uniform_real_distribution<double>(0.0, 1.0)(alloc_rng_) < config_.fail_alloc_prob)
        return Error(KEEL_STATUS_OUT_OF_MEMORY, std::string("injected ") + kind +
                                                    " allocation failure (KEEL_CPU_FAIL_ALLOC_PROB, seed " +
                                                    std::to_string(config_.seed) + ")");
    ++count;
    return ok();
}

// ---- enqueue ---------------------------------------------------------------

Result<void> Checker::prepare(Stream& stream, Op& scratch) {
    if (!scratch.check) scratch.check = std::make_unique<CheckedOp>();
    CheckedOp& c = *scratch.check;
    c.source_fingerprint.reset();
    // Only a fingerprint reads host memory at enqueue (safely); everything
    // else about the host side is checked when the copy runs.
    if (scratch.kind != OpKind::copy_h2d || !config_.check_host_sources) return ok();
    const void* host = scratch.src_host;
    {
        // The destination of a copy the host has not observed yet, or a
        // range a fallible host function queued before this copy may be
        // writing now (a communicator's gate filling its staging on another
        // thread): it will change, and reading it now would race with that
        // write (admit() would drop the fingerprint anyway).
        auto lock = this->lock();
        const auto begin = reinterpret_cast<std::uintptr_t>(host);
        if (host_range_guarded(begin, begin + scratch.size) || host_range_pending_write(begin, begin + scratch.size) ||
            track(lock, stream).last_fallible_host_function > stream.timeline()->completed())
            return ok();
    }
    // Pinned memory is the plugin's own: it cannot vanish behind the checker's back.
    const auto block = pinned_.find_containing(host, scratch.size);
    Result<void> readable = ok();
    if (block && static_cast<const std::byte*>(host) + scratch.size <= block->base + block->size) {
        host_memory::Fingerprint f;
        f.add(static_cast<const std::byte*>(host), scratch.size);
        c.source_fingerprint = f.value();
    } else if (auto fp = host_memory::fingerprint(host, scratch.size); fp.ok()) {
        c.source_fingerprint = *fp;
    } else {
        readable = fp.error();
    }
    const char* role = "source";
    if (readable.ok()) return ok();
    auto lock = this->lock();
    track(lock, stream);
    return report(lock, Finding{readable.error().code(),
                                std::string("use after free of host memory: ") + op_name(scratch.kind) + " on stream " +
                                    std::to_string(stream.id()) + ": its host " + role + " " +
                                    readable.error().message() + " at enqueue (freed?)",
                                {stream.id()}});
}

Result<std::uint64_t> Checker::enqueue(Stream& stream, Op& scratch) {
    KEEL_TRY(prepare(stream, scratch));
    auto lock = this->lock();
    return admit(lock, stream, scratch);
}

std::optional<Checker::Finding> Checker::resolve(const OpRef& op, const OpAccess& a, std::vector<Target>& out) const {
    if (a.device) {
        auto r = memory_.locate(a.addr, a.size);
        if (!r.ok()) {
            const bool freed = r.error().message().find("use after free") != std::string::npos;
            const bool closed = freed && ipc_order_.closed_import(a.addr & ~kOffsetMask);
            return Finding{r.error().code(),
                           std::string(closed ? "use after close of imported memory (ipc_memory_close): "
                                              : freed ? "use after free: " : "out of range: ") +
                               op.describe() + ": " + a.role + " " + r.error().message(),
                           {op.stream}};
        }
        out.push_back(Target{r->id, r->base, r->size, false, a});
        return std::nullopt;
    }
    const auto b = pinned_.find_containing(reinterpret_cast<const void*>(a.addr), a.size);
    if (!b) return std::nullopt;  // pageable host memory: not tracked
    const auto base = reinterpret_cast<std::uint64_t>(b->base);
    if (a.addr + a.size > base + b->size)
        return Finding{KEEL_STATUS_OUT_OF_RANGE,
                       "out of range: " + op.describe() + ": host " + a.role + " " + range_text(a.addr, a.size) +
                           " runs past the end of pinned allocation #" + std::to_string(b->id) + " (" + hex(base) +
                           ", " + std::to_string(b->size) + " bytes)",
                       {op.stream}};
    out.push_back(Target{b->id, base, b->size, true, a});
    return std::nullopt;
}

std::string Checker::describe_target(const Target& t, std::uint64_t begin, std::uint64_t end) const {
    return range_text(t.base + begin, end - begin) + " (bytes " + std::to_string(begin) + ".." + std::to_string(end) +
           " of " + (t.pinned ? "pinned" : "device") + " allocation #" + std::to_string(t.id) + ", " +
           std::to_string(t.size) + " bytes)";
}

std::string Checker::describe_access(const AccessRecord& r, const Target& t) const {
    return r.op.describe() + " " + verb(r.write) + " " + describe_target(t, r.begin, r.end) + " (its " + r.role + ")";
}

Checker::Finding Checker::race(const OpRef& op, const Target& t, const AccessRecord& earlier) const {
    const std::uint64_t begin = t.access.addr - t.base;
    const char* kind = earlier.write ? (t.access.write ? "write after write" : "read after write") : "write after read";
    const std::string s = std::to_string(op.stream), e = std::to_string(earlier.op.stream);
    return Finding{KEEL_STATUS_FAILED_PRECONDITION,
                   std::string("race (") + kind + "): " + op.describe() + " " + verb(t.access.write) + " " +
                       describe_target(t, begin, begin + t.access.size) + " (its " + t.access.role + "), but " +
                       describe_access(earlier, t) + " and stream " + s + " is not ordered after it: record an " +
                       "event on stream " + e + " after it and make stream " + s +
                       " wait for that event (stream_wait_event), or synchronize before enqueueing",
                   {op.stream, earlier.op.stream}};
}

std::optional<Checker::Finding> Checker::stale_view(const OpRef& op, const Target& t) const {
    const std::uint64_t begin = t.access.addr - t.base;
    const auto* r = t.pinned ? nullptr : released_overlap(t.id, begin, begin + t.access.size);
    if (r == nullptr) return std::nullopt;
    return Finding{KEEL_STATUS_OUT_OF_RANGE,
                   "use after free: " + op.describe() + " " + verb(t.access.write) + " " +
                       describe_target(t, begin, begin + t.access.size) + " (its " + t.access.role +
                       "), in the block " + range_text(t.base + r->first, r->second.end - r->first) +
                       " its allocator released (on stream " + std::to_string(r->second.stream) +
                       "): a stale view of a freed buffer",
                   {op.stream}};
}

Result<std::uint64_t> Checker::admit(const Lock& lock, Stream& stream, Op& scratch) {
    KEEL_TRY(stream.check_usable());
    if (!scratch.check) scratch.check = std::make_unique<CheckedOp>();
    CheckedOp& c = *scratch.check;
    const std::uint64_t id = stream.id();
    TrackedStream& tracked = track(lock, stream);
    const bool kernel = scratch.kind == OpKind::kernel;
    // Exact: every push on a checked stream happens under this lock.
    const std::uint64_t position = stream.enqueued() + 1;
    c.use = OpRef{kernel ? "kernel " : "", kernel ? scratch.kernel->name : op_name(scratch.kind), position, id};
    c.allocation_ids.clear();
    c.host_write_begin = c.host_write_end = 0;
    c.pinned_id = 0;
    c.host_guard = 0;
    c.destination_fingerprint.reset();
    c.clock.reset();

    scratch_accesses_.clear();
    scratch_targets_.clear();
    accesses_of(scratch, scratch_accesses_);
    for (const OpAccess& a : scratch_accesses_) {
        std::optional<Finding> f = resolve(c.use, a, scratch_targets_);
        // Without races the worker reports bad addresses when the op runs.
        if (f && config_.races) return report(lock, std::move(*f));
    }
    std::uint64_t tick = 0;
    if (config_.races) {
        for (const Target& t : scratch_targets_)
            if (std::optional<Finding> f = stale_view(c.use, t)) return report(lock, std::move(*f));
        for (const Target& t : scratch_targets_)
            if (!t.pinned)
                if (std::optional<std::string> why = ipc_order_.unordered(t.id, t.access.write))
                    return report(lock, Finding{KEEL_STATUS_FAILED_PRECONDITION,
                                                "race (across processes): " + c.use.describe() + " " + *why,
                                                {id}});
        const VectorClock& clock = order_.clock(id);
        tick = clock.get(id) + 1;
        for (const Target& t : scratch_targets_) {
            const std::uint64_t begin = t.access.addr - t.base;
            if (const AccessRecord* earlier =
                    order_.find_conflict(t.id, begin, begin + t.access.size, t.access.write, clock))
                return report(lock, race(c.use, t, *earlier));
        }
    }

    // Admitted. Everything the worker reads of `c` is written before the push.
    for (const Target& t : scratch_targets_) {
        c.allocation_ids.push_back(t.id);
        if (t.pinned) c.pinned_id = t.id;
    }
    if (scratch.kind == OpKind::copy_h2d && c.source_fingerprint) {
        // What legitimately changes the source before this copy reads it
        // (keel.h: when it executes): a pending d2h into this range, or a
        // fallible host function of this stream queued before it (keel.h
        // 1.4: one that takes part in the stream's work and may fail it,
        // such as a communicator's gate filling the staging this copy then
        // delivers). A plain host function is a callback: a source changed
        // while one is pending is still the host's bug.
        const auto begin = reinterpret_cast<std::uintptr_t>(scratch.src_host);
        if (host_range_pending_write(begin, begin + scratch.size) ||
            tracked.last_fallible_host_function > stream.timeline()->completed())
            c.source_fingerprint.reset();
    }
    if (scratch.kind == OpKind::copy_d2h) {
        c.host_write_begin = reinterpret_cast<std::uintptr_t>(scratch.dst_host);
        c.host_write_end = c.host_write_begin + scratch.size;
    }
    if (config_.races) {
        order_.commit(id, tick);
        c.tick = tick;
        for (const Target& t : scratch_targets_) {
            const std::uint64_t begin = t.access.addr - t.base;
            order_.record(t.id, AccessRecord{c.use, tick, begin, begin + t.access.size, t.access.role, t.access.write});
            if (t.access.write && !t.pinned) ipc_order_.on_write(t.id, id, tick);
        }
        if (scratch.kind == OpKind::host_func) c.clock = order_.snapshot(id);
        if (scratch.kind == OpKind::copy_d2h) guard_destination(lock, stream, scratch, c);
    }
    if (scratch.kind == OpKind::host_func) tracked.last_host_function = position;
    if (scratch.kind == OpKind::host_func && scratch.fallible_fn != nullptr)
        tracked.last_fallible_host_function = position;
    register_pending(c);
    tracked.last_position = stream.push_checked(scratch);
    return tracked.last_position;
}

Checker::TrackedStream& Checker::track(const Lock&, const Stream& stream) {
    TrackedStream& tracked = streams_[stream.id()];
    if (!tracked.timeline) tracked.timeline = stream.timeline();
    return tracked;
}

Error Checker::report(const Lock&, Finding finding) {
    for (std::uint64_t s : finding.streams) {
        auto it = streams_.find(s);
        if (it == streams_.end() || !it->second.timeline) continue;
        // From its next operation on: what is queued already still runs.
        it->second.timeline->fail(it->second.last_position + 1,
                                  Error(finding.code, "[cpu checker] " + finding.message));
    }
    plugin::HostLog::write(KEEL_LOG_ERROR, "[cpu checker] " + finding.message);
    if (config_.abort_on_finding) {
        std::fprintf(stderr, "[cpu checker] %s\nkeel: aborting (KEEL_CPU_CHECK=abort)\n", finding.message.c_str());
        std::fflush(stderr);
        std::abort();
    }
    return Error(finding.code, std::move(finding.message));
}

// ---- ordering --------------------------------------------------------------

Checker::ClockRef Checker::clock_of(const Lock&, const Stream& stream) {
    return config_.races ? order_.snapshot(stream.id()) : nullptr;
}

void Checker::wait(const Lock&, const Stream& stream, const ClockRef& event_clock) {
    if (config_.races && event_clock) order_.wait(stream.id(), *event_clock);
}

void Checker::host_learns(const ClockRef& known) {
    if (!known) return;
    auto lock = this->lock();
    order_.host_learns(*known);
    release_observed_destinations(lock);
}

std::pair<std::uint64_t, Checker::ClockRef> Checker::enqueued_so_far(Stream& stream) {
    auto lock = this->lock();
    return {stream.enqueued(), clock_of(lock, stream)};
}

Result<void> Checker::synchronize(Stream& stream) {
    const auto [target, known] = enqueued_so_far(stream);
    stream.timeline()->wait_for(target);
    host_learns(known);
    return stream.check_usable();
}

Result<bool> Checker::query(Stream& stream) {
    const auto [target, known] = enqueued_so_far(stream);
    stream.timeline()->demand(target);  // a lazy stream runs what a query asks about
    const bool done = stream.timeline()->reached(target);
    if (done) host_learns(known);
    KEEL_TRY(stream.check_usable());
    return done;
}

void Checker::host_function_starts(const Op& op) {
    if (op.check) host_learns(op.check->clock);
}

void Checker::stream_destroyed(std::uint64_t stream) {
    auto lock = this->lock();
    if (config_.races) order_.remove_stream(stream);
    streams_.erase(stream);
    release_destinations_of(lock, stream);
}

std::size_t Checker::remembered_segments() const {
    std::lock_guard lock(mutex_);
    return order_.remembered_segments();
}

// ---- frees -----------------------------------------------------------------

Result<void> Checker::late_free(const Lock& lock, const char* what, std::uint64_t id, std::uint64_t base,
                                std::uint64_t size, bool pinned) {
    if (config_.late_free == LateFreeMode::off) return ok();
    std::string msg = std::string("late free: ") + (pinned ? "pinned" : "device") + " allocation #" +
                      std::to_string(id) + " " + hex(base) + " (" + std::to_string(size) + " bytes) freed while ";
    std::uint64_t stream = 0;
    if (config_.races) {
        const AccessRecord* use = order_.unordered_use(id);
        if (use == nullptr) return ok();
        stream = use->op.stream;
        msg += use->op.describe() + " (which " + verb(use->write) + " bytes " + std::to_string(use->begin) + ".." +
               std::to_string(use->end) + ", its " + use->role + ") is not known to have completed: the host " +
               "did not synchronize with stream " + std::to_string(stream) + " (stream_synchronize, or " +
               "event_synchronize/event_query on an event recorded after it) before freeing";
    } else {
        std::optional<OpRef> user = pending_user(id);
        if (!user) return ok();
        stream = user->stream;
        msg += user->describe() + " (queued, not yet complete) still uses it";
    }
    if (config_.late_free == LateFreeMode::log) {
        plugin::HostLog::write(KEEL_LOG_ERROR, std::string("[cpu ") + what + "] " + msg);
        return ok();
    }
    return report(lock, Finding{KEEL_STATUS_FAILED_PRECONDITION,
                                msg + "; the free is refused and the memory stays allocated (free it again once " +
                                    "that work is known complete)",
                                {stream}});
}

Result<void> Checker::free_device(keel_device_addr addr, const std::function<Result<void>()>& free) {
    auto lock = this->lock();
    const std::optional<AllocationInfo> live = memory_.find_live(addr);
    const bool is_base = live && live->base == addr;
    if (is_base) KEEL_TRY(late_free(lock, "device_free", live->id, live->base, live->size, false));
    KEEL_TRY(free());
    if (is_base) {
        order_.forget(live->id);
        released_.erase(live->id);
    }
    return ok();
}

Result<void> Checker::free_pinned(void* ptr, const std::function<Result<void>()>& free) {
    auto lock = this->lock();
    Result<PinnedInfo> block = pinned_.find_base(ptr);
    if (block.ok())
        KEEL_TRY(late_free(lock, "host_free", block->id, reinterpret_cast<std::uint64_t>(block->base), block->size,
                           true));
    if (block.ok()) {
        // Freed anyway (late frees only logged): the block is poisoned next.
        const auto base = reinterpret_cast<std::uintptr_t>(block->base);
        release_destinations(lock, base, base + block->size);
    }
    KEEL_TRY(free());
    if (block.ok()) order_.forget(block->id);
    return ok();
}

// ---- caching-allocator annotations ---------------------------------------------

const std::pair<const std::uint64_t, Checker::Released>* Checker::released_overlap(std::uint64_t id,
                                                                                   std::uint64_t begin,
                                                                                   std::uint64_t end) const {
    auto ranges = released_.find(id);
    if (ranges == released_.end()) return nullptr;
    auto it = ranges->second.upper_bound(begin);
    if (it != ranges->second.begin() && std::prev(it)->second.end > begin) return &*std::prev(it);
    return it != ranges->second.end() && it->first < end ? &*it : nullptr;
}

Result<AllocationInfo> Checker::locate_block(const Lock& lock, Stream& stream, std::string_view what,
                                             keel_device_addr addr, std::uint64_t size) {
    auto r = memory_.locate(addr, size);
    if (r.ok()) return r;
    track(lock, stream);
    const bool freed = r.error().message().find("use after free") != std::string::npos;
    return report(lock, Finding{r.error().code(),
                                std::string(freed ? "use after free: " : "out of range: ") + std::string(what) +
                                    " on stream " + std::to_string(stream.id()) + ": block " + r.error().message(),
                                {stream.id()}});
}

Result<void> Checker::release_range(Stream& stream, keel_device_addr addr, std::uint64_t size) {
    auto lock = this->lock();
    KEEL_TRY(stream.check_usable());
    if (!config_.races) return ok();
    KEEL_TRY_ASSIGN(const AllocationInfo a, locate_block(lock, stream, kReleaseRange, addr, size));
    const std::uint64_t begin = addr - a.base, end = begin + size;
    if (const auto* r = released_overlap(a.id, begin, end)) {
        track(lock, stream);
        return report(lock, Finding{KEEL_STATUS_FAILED_PRECONDITION,
                                    "double free: " + std::string(kReleaseRange) + " on stream " +
                                        std::to_string(stream.id()) + " releases " + range_text(addr, size) +
                                        " of device allocation #" + std::to_string(a.id) + ", which overlaps [" +
                                        hex(a.base + r->first) + ", +" + std::to_string(r->second.end - r->first) +
                                        " bytes) released before (on stream " + std::to_string(r->second.stream) +
                                        ") and not acquired since",
                                    {stream.id()}});
    }
    released_[a.id].emplace(begin, Released{end, stream.id()});
    return ok();
}

Result<void> Checker::acquire_range(Stream& stream, keel_device_addr addr, std::uint64_t size) {
    auto lock = this->lock();
    KEEL_TRY(stream.check_usable());
    if (!config_.races) return ok();
    KEEL_TRY_ASSIGN(const AllocationInfo a, locate_block(lock, stream, kAcquireRange, addr, size));
    auto found = released_.find(a.id);
    if (found == released_.end()) return ok();  // a block carved for the first time
    ReleasedRanges& ranges = found->second;
    const std::uint64_t begin = addr - a.base, end = begin + size;
    // Cut [begin, end) out of every released range it overlaps.
    while (const auto* r = released_overlap(a.id, begin, end)) {
        const std::uint64_t r_begin = r->first;
        const Released old = r->second;
        ranges.erase(r_begin);
        if (r_begin < begin) ranges.emplace(r_begin, Released{begin, old.stream});
        if (old.end > end) ranges.emplace(end, Released{old.end, old.stream});
    }
    if (ranges.empty()) released_.erase(found);
    return ok();
}

// ---- timing-based bookkeeping ----------------------------------------------

void Checker::register_pending(CheckedOp& c) {
    c.use_key = 0;
    // With races on, late frees are judged by happens-before, not by what is pending.
    const bool users = !config_.races && !c.allocation_ids.empty();
    if (!users && c.host_write_end == 0) return;  // nothing for on_complete to undo
    c.use_key = next_key_++;
    if (users)
        for (std::uint64_t id : c.allocation_ids) users_[id].emplace(c.use_key, c.use);
    if (c.host_write_end != 0) {
        host_writes_.emplace(c.host_write_begin, c.host_write_end);
        longest_host_write_ = std::max(longest_host_write_, c.host_write_end - c.host_write_begin);
    }
}

void Checker::on_complete(Op& op) {
    if (!op.check || op.check->use_key == 0) return;
    CheckedOp& c = *op.check;
    std::lock_guard lock(mutex_);
    for (std::uint64_t id : c.allocation_ids) {
        auto it = users_.find(id);
        if (it == users_.end()) continue;
        it->second.erase(c.use_key);
        if (it->second.empty()) users_.erase(it);
    }
    if (c.host_write_end != 0) {
        auto [lo, hi] = host_writes_.equal_range(c.host_write_begin);
        for (auto it = lo; it != hi; ++it)
            if (it->second == c.host_write_end) {
                host_writes_.erase(it);
                break;
            }
    }
    c.use_key = 0;
}

std::optional<OpRef> Checker::pending_user(std::uint64_t id) const {
    auto it = users_.find(id);
    if (it == users_.end() || it->second.empty()) return std::nullopt;
    return it->second.begin()->second;
}

bool Checker::host_range_pending_write(std::uintptr_t begin, std::uintptr_t end) const {
    // Only ranges starting less than the longest pending range before `begin` can reach it.
    const std::uintptr_t from = begin > longest_host_write_ ? begin - longest_host_write_ : 0;
    for (auto it = host_writes_.lower_bound(from); it != host_writes_.end() && it->first < end; ++it)
        if (it->second > begin) return true;
    return false;
}

// ---- worker side -------------------------------------------------------------

void Checker::on_execution_error(const std::string& message, bool injected) const {
    if (!config_.abort_on_finding || injected) return;
    std::fprintf(stderr, "%s\nkeel: aborting (KEEL_CPU_CHECK=abort)\n", message.c_str());
    std::fflush(stderr);
    std::abort();
}

std::uint64_t Checker::delay_us(std::mt19937_64& rng) const {
    if (config_.delay_us == 0) return 0;
    if (!config_.delay_random) return config_.delay_us;
    return std::uniform_int_distribution<std::uint64_t>(0, config_.delay_us)(rng);
}

bool Checker::inject_op_failure(std::mt19937_64& rng) {
    if (config_.fail_op_after >= 0 && ops_.fetch_add(1, std::memory_order_relaxed) == config_.fail_op_after)
        return true;
    return config_.fail_op_prob > 0.0 &&
           std::uniform_real_distribution<double>(0.0, 1.0)(rng) < config_.fail_op_prob;
}

}  // namespace keel::cpu
