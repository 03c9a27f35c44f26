#include "fallible_reach.hpp"

#include <keel/base/no_destructor.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

namespace keel::detail::fallible {

namespace {

// Every fallible host function of `count` numbered below `limit`.
struct Reach {
    std::shared_ptr<PendingFallible> count;
    std::uint64_t limit = 0;
};
using Reaches = std::vector<Reach>;

struct StreamEntry {
    std::shared_ptr<PendingFallible> own;
    Reaches arrived;  // of the streams it was ordered after
};

struct ReachTable {
    std::atomic<bool> in_use{false};
    std::mutex mu;
    std::unordered_map<keel_stream, StreamEntry> streams;
    std::unordered_map<keel_event, Reaches> events;
};

ReachTable& reach_table() {
    static base::NoDestructor<ReachTable> t;  // streams may close during static destruction
    return *t;
}

bool reach_in_use() noexcept { return reach_table().in_use.load(std::memory_order_acquire); }

// Under the table's lock.
StreamEntry& entry_of(ReachTable& t, keel_stream stream) {
    StreamEntry& e = t.streams[stream];
    if (!e.own) e.own = std::make_shared<PendingFallible>();
    return e;
}

// Adds `r` to `into` (the later point of one count wins) and drops the
// reaches that can no longer fail anything. Under the table's lock.
void merge_reach(Reaches& into, const Reach& r) {
    into.erase(std::remove_if(into.begin(), into.end(), [](const Reach& e) { return e.count->clean_below(e.limit); }),
               into.end());
    if (r.count->clean_below(r.limit)) return;
    auto same = std::find_if(into.begin(), into.end(), [&](const Reach& e) { return e.count == r.count; });
    if (same == into.end()) into.push_back(r);
    else same->limit = std::max(same->limit, r.limit);
}

// What work enqueued on `stream` now depends on. Under the table's lock.
Reaches reaches_of(ReachTable& t, keel_stream stream) {
    Reaches out;
    auto it = t.streams.find(stream);
    if (it == t.streams.end()) return out;
    const StreamEntry& e = it->second;
    merge_reach(out, Reach{e.own, e.own->next()});
    for (const Reach& r : e.arrived) merge_reach(out, r);
    return out;
}

// A runtime host function of its own, counted on its stream.
struct CountedCall {
    keel_fallible_host_fn fn;
    void* user_data;
    std::shared_ptr<PendingFallible> count;
    std::uint64_t number;
};

keel_error* counted_call(void* user_data, keel_status status) noexcept {
    std::unique_ptr<CountedCall> call(static_cast<CountedCall*>(user_data));
    keel_error* returned = call->fn(call->user_data, status);
    std::optional<Error> failure;
    try {
        failure = fallible_outcome(status, returned == nullptr ? Result<void>(ok())
                                                               : Result<void>(Error(returned->code, returned->message)));
    } catch (const std::bad_alloc&) {
        // No room for the message: the stream still fails (the plugin has
        // the error), only a settle() of a stream waiting for it misses it.
    }
    call->count->finished(call->number, std::move(failure));
    return returned;
}

}  // namespace

std::shared_ptr<PendingFallible> count_of(keel_stream stream) {
    ReachTable& t = reach_table();
    std::lock_guard lock(t.mu);
    return entry_of(t, stream).own;
}

Result<void> enqueue_counted(const PluginApi& api, keel_stream stream, keel_fallible_host_fn fn, void* user_data) {
    std::unique_ptr<CountedCall> call;
    try {
        std::shared_ptr<PendingFallible> count = count_of(stream);
        const std::uint64_t number = count->added();
        call.reset(new CountedCall{fn, user_data, std::move(count), number});
    } catch (const std::bad_alloc&) {
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[Stream] out of host memory");
    }
    reach_table().in_use.store(true, std::memory_order_release);
    Result<void> r = api.stream_enqueue_fallible_host_func(stream, &counted_call, call.get());
    if (!r.ok()) {
        call->count->finished(call->number, std::nullopt);  // never runs
        return r;
    }
    (void)call.release();  // the trampoline's now
    return ok();
}

void note_counting() noexcept { reach_table().in_use.store(true, std::memory_order_release); }

void event_recorded(keel_event event, keel_stream stream) {
    if (!reach_in_use()) return;
    ReachTable& t = reach_table();
    std::lock_guard lock(t.mu);
    try {
        Reaches now = reaches_of(t, stream);
        if (now.empty()) t.events.erase(event);
        else t.events[event] = std::move(now);
    } catch (const std::bad_alloc&) {
        // Out of host memory: the record carries nothing (settle() of a
        // stream waiting for it may then miss a pending failure).
        t.events.erase(event);
    }
}

void event_gone(keel_event event) noexcept {
    if (!reach_in_use()) return;
    ReachTable& t = reach_table();
    Reaches dropped;
    std::lock_guard lock(t.mu);
    auto it = t.events.find(event);
    if (it == t.events.end()) return;
    dropped = std::move(it->second);
    t.events.erase(it);
}

Result<void> arrive_from_event(keel_stream to, keel_event event) {
    if (!reach_in_use()) return ok();
    ReachTable& t = reach_table();
    std::lock_guard lock(t.mu);
    auto it = t.events.find(event);
    if (it == t.events.end()) return ok();
    try {
        const Reaches carried = it->second;
        Reaches& mine = entry_of(t, to).arrived;
        for (const Reach& r : carried) merge_reach(mine, r);
    } catch (const std::bad_alloc&) {
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[Stream::wait] out of host memory");
    }
    return ok();
}

Result<void> arrive_from_stream(keel_stream to, keel_stream from) {
    if (to == from || !reach_in_use()) return ok();
    ReachTable& t = reach_table();
    std::lock_guard lock(t.mu);
    try {
        const Reaches carried = reaches_of(t, from);
        if (carried.empty()) return ok();
        Reaches& mine = entry_of(t, to).arrived;
        for (const Reach& r : carried) merge_reach(mine, r);
    } catch (const std::bad_alloc&) {
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[Stream::order_after] out of host memory");
    }
    return ok();
}

void forget_arrivals(keel_stream stream) noexcept {
    if (!reach_in_use()) return;
    ReachTable& t = reach_table();
    Reaches dropped;
    std::lock_guard lock(t.mu);
    auto it = t.streams.find(stream);
    if (it != t.streams.end()) dropped.swap(it->second.arrived);
}

void stream_gone(keel_stream stream) noexcept {
    ReachTable& t = reach_table();
    StreamEntry dropped;
    std::lock_guard lock(t.mu);
    auto it = t.streams.find(stream);
    if (it == t.streams.end()) return;
    dropped = std::move(it->second);
    t.streams.erase(it);
}

Result<std::optional<StillPending>> settle(keel_stream stream, std::chrono::milliseconds timeout) {
    if (!reach_in_use()) return std::optional<StillPending>();
    Reaches reaches;
    {
        ReachTable& t = reach_table();
        std::lock_guard lock(t.mu);
        try {
            reaches = reaches_of(t, stream);
        } catch (const std::bad_alloc&) {
            return Error(KEEL_STATUS_OUT_OF_MEMORY, "[settle_fallible_host_funcs] out of host memory");
        }
    }
    if (reaches.empty()) return std::optional<StillPending>();  // the usual case: nothing waits
    const auto now = std::chrono::steady_clock::now();
    std::optional<Error> failed;
    // A failure already known ends it at once, whichever stream it was on.
    for (const Reach& r : reaches) {
        (void)r.count->settled_below(r.limit, now, failed);
        if (failed) return *failed;
    }
    const auto deadline = now + timeout;
    bool all = true;
    for (const Reach& r : reaches) {
        all = r.count->settled_below(r.limit, deadline, failed) && all;
        if (failed) return *failed;
    }
    if (all) return std::optional<StillPending>();
    StillPending still;
    for (const Reach& r : reaches) {
        (void)r.count->settled_below(r.limit, deadline, failed);
        if (failed) return *failed;
        if (const std::uint64_t n = r.count->pending_below(r.limit); n > 0) {
            still.host_funcs += n;
            ++still.streams;
        }
    }
    if (still.host_funcs == 0) return std::optional<StillPending>();  // finished meanwhile
    return std::optional<StillPending>(still);
}

}  // namespace keel::detail::fallible
