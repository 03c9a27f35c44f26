// Which pending fallible host functions (pending_fallible.hpp) a stream's
// next operation depends on: its own, and those of every stream it was
// ordered after (an event or fence recorded there and waited for, order_after,
// a bridged wait across devices), up to the point it waited for, transitively.
//
// A plugin carries a stream's failure along waits (keel.h 1.3
// [error-propagation.across-waits]), so a host function, a gate or a copy
// that runs after the wait sees it. What it cannot do is take back work
// already handed to a device that runs it regardless: a collective enqueued
// on stream B, which waits for an event recorded on stream A behind a host
// function that then fails, would reduce data A never produced. So the
// points that can still fail travel with the ordering, as cross-device
// origins do (cross_device/origins.hpp), and settle() waits for all of them.
//
// A reach is a stream's count of fallible host functions and a point of it
// (every one numbered below `limit`). Counts refer to nothing, so reaches
// may go anywhere without cycles. Kept per stream handle and per event
// handle, one reach per count (the later point wins), dropped once clean (no
// failure and nothing pending below its point: it can never fail anything).
// Until the first fallible host function is counted every call is a no-op
// behind one relaxed load.
//
// Sync: every function may be called from any thread except a host
// function's; no lock is held while a plugin is called.
#pragma once

#include "pending_fallible.hpp"
#include "plugin_api.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace keel::detail::fallible {

// The count of `stream`'s fallible host functions, made on first need (a
// helper stream, a user's stream at creation); valid until stream_gone(), and
// kept alive by those who hold it beyond that.
[[nodiscard]] std::shared_ptr<PendingFallible> count_of(keel_stream stream);

// A fallible host function is about to be counted (CountedHostFunc): from
// now on the ordering is tracked.
void note_counting() noexcept;

// Enqueues a fallible host function of the runtime's own on `stream`,
// counted like a user's. On error nothing is enqueued and `user_data` is
// still the caller's.
[[nodiscard]] Result<void> enqueue_counted(const PluginApi& api, keel_stream stream, keel_fallible_host_fn fn,
                                           void* user_data);

// `event` was just recorded on `stream`: its record carries what the stream
// depends on now.
void event_recorded(keel_event event, keel_stream stream);
// `event` is destroyed or given back to a pool.
void event_gone(keel_event event) noexcept;
// Work enqueued on `to` from now on depends on what `event`'s most recent
// record (through the runtime) carried.
[[nodiscard]] Result<void> arrive_from_event(keel_stream to, keel_event event);
// ... on what `from` depends on now (its work enqueued so far).
[[nodiscard]] Result<void> arrive_from_stream(keel_stream to, keel_stream from);
// A helper stream between two users: what it waited for is forgotten (its
// own host functions stay counted).
void forget_arrivals(keel_stream stream) noexcept;
// `stream` closes: its entry goes.
void stream_gone(keel_stream stream) noexcept;

// What settle() found when it did not settle in time.
struct StillPending {
    std::uint64_t host_funcs = 0;  // pending when the time ran out
    std::uint64_t streams = 0;     // on how many streams (this one included)
};

// Waits, at most `timeout`, until no fallible host function `stream`'s next
// operation depends on is pending; returns the first failure one of them
// returned or saw, as soon as one did. A value: they did not run in that
// time (how many still pending, on how many streams); empty: settled.
[[nodiscard]] Result<std::optional<StillPending>> settle(keel_stream stream, std::chrono::milliseconds timeout);

}  // namespace keel::detail::fallible
