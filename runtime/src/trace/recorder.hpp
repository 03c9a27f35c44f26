// The trace recorder: what keel did, appended by each thread to a buffer of
// its own (no lock, no shared counter on the hot path), written out as a
// Chrome trace event / Perfetto JSON file when the session stops.
//
// A session is on while g_on is set; every hook first tests it with one
// relaxed load, so tracing off costs one predictable branch. Records carry
// the session they belong to: a record a thread appends while the session
// stops is dropped, never written into the next one.
//
// Device times come from timing events where the device offers them, else
// from two host functions around an operation (its start and end marks):
// exact where a stream runs host functions in order on a host thread, else
// when the host learned that the stream reached the point.
//
// Threads: Sync. A record is written by its thread only; its start and end
// times by the stream's host functions, through atomics.
#pragma once

#include <keel/keel.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace keel::trace {

// Set while a session records; a line of its own, read by every hook.
alignas(64) extern std::atomic<bool> g_on;

#ifdef KEEL_TRACE_HOOKS_COMPILED_OUT
// A build without the hooks (KEEL_TRACE_HOOKS=OFF), to measure what they cost.
[[nodiscard]] constexpr bool on() noexcept { return false; }
inline constexpr bool kHooksCompiledIn = false;
#else
[[nodiscard]] inline bool on() noexcept { return g_on.load(std::memory_order_relaxed); }
inline constexpr bool kHooksCompiledIn = true;
#endif

[[nodiscard]] inline std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

enum class Kind : std::uint8_t {
    copy_h2d,
    copy_d2h,
    copy_d2d,
    memset,
    kernel,
    host_func,
    hold,
    wait_event,
    wait_fence,
    record_event,
    fence,
    range,          // a named range (TraceRange, communication operations)
    alloc,          // instant on the stream's track
    free,           // instant on the stream's track
    record_stream,  // instant on the using stream's track
    hold_release,   // instant on the holding stream's track: what it held is released
    free_settled,   // instant on the block's stream's track: a pending free's block is reusable
    host_wait,      // on the host thread's track
    memory_counter, // allocated and reserved bytes of a device
};

[[nodiscard]] const char* kind_name(Kind kind) noexcept;

struct ThreadBuffer;

// One event. Written by its thread before it is published; start_ns and
// end_ns later by the stream's marks.
struct Record {
    std::int64_t host_ns = 0;        // when the call began (enqueue; a wait's start; an instant)
    std::atomic<std::int64_t> host_end_ns{0};  // when the call returned (0: unknown)
    std::atomic<std::int64_t> start_ns{0};  // when the stream reached it (0: unknown)
    std::atomic<std::int64_t> end_ns{0};    // when the stream finished it (0: unknown)
    std::uint64_t bytes = 0;
    std::uint64_t a = 0;             // address (alloc, free); rank (range); allocated (counter)
    std::uint64_t b = 0;             // peer (range); reserved (counter); waited stream (host wait)
    const char* name = nullptr;      // static or interned text
    const char* detail = nullptr;    // static or interned text (a category, the device of a counter)
    std::uint64_t stream = 0;        // the stream's id (tid); 0 for host-thread records
    ThreadBuffer* owner = nullptr;
    std::uint32_t session = 0;
    std::atomic<std::int32_t> status{0};  // the stream's status when the end mark ran
    Kind kind = Kind::copy_h2d;
    std::uint8_t flags = 0;
};

inline constexpr std::uint8_t kFlagCacheHit = 1u << 0;
inline constexpr std::uint8_t kFlagCacheMiss = 1u << 1;
inline constexpr std::uint8_t kFlagPending = 1u << 2;  // a free that waits for other streams' uses

// A new record of the current session on this thread's buffer, its session,
// owner and host_ns filled in; null when the session is over or the
// buffer is full (counted as dropped). publish() makes it visible.
[[nodiscard]] Record* append(Kind kind) noexcept;
void publish(Record* record) noexcept;

// Start and end marks: host functions for the stream (user_data: Record*).
void mark_start(void* record, keel_status status);
void mark_end(void* record, keel_status status);
// A mark that will never run (its enqueue failed).
void mark_dropped(Record* record) noexcept;
// Counts the two marks of `record` before they are enqueued.
void marks_pending(Record* record, int count) noexcept;

// The text interned for the life of the process (kernel names, tags).
[[nodiscard]] const char* intern(std::string_view text);

// The name of stream `id` in this session ("cpu:0 stream 3"), once per
// stream and session; `session_seen` is the stream's own note of the last
// session it was named in.
void name_stream(std::atomic<std::uint32_t>& session_seen, std::uint64_t id, const std::string& device);
[[nodiscard]] std::uint32_t current_session() noexcept;

// Starts a session writing to `path` at stop (file name already resolved).
struct SessionOptions {
    std::string path;
    bool device_times = true;
};
[[nodiscard]] bool device_times() noexcept;

}  // namespace keel::trace
