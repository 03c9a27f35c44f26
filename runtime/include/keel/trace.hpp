// Tracing: a timeline of what keel did, as a Chrome trace event / Perfetto
// JSON file (open it in https://ui.perfetto.dev or chrome://tracing, or
// summarise and draw it with tools/keel-trace).
//
// One track per stream (named "<device> stream <id>") with each operation:
// copies (and how they were staged), memset, kernels (by name), host
// functions, holds, waits on events and fences, event records, named
// ranges (communication operations with their rank and peer); each with the
// host time of its enqueue and, where the device tells, when the stream
// started and finished it. One track per host thread with its waits (what
// it waited for and how long). Allocations and frees (cache hit or miss)
// and record_stream as instants on the stream's track, and each device's
// allocated and reserved bytes as a counter track.
//
// A session starts with Trace::start() or, for the whole process, with
// KEEL_TRACE=<file> (from the first Runtime::create to exit). One session at
// a time per process. In the file name, "%p" becomes the process id and
// "%r" the rank (RANK, as keel-launch and torchrun set it); with RANK set
// and no "%r", ".rank<r>" goes before the extension, so the ranks of a job
// write one file each, which `keel-trace merge` puts on one timeline.
//
// A snapshot of a device's memory (segments, blocks, owning stream, state,
// tags) is MemoryPool::snapshot().to_json(); see the memory history below.
//
// Cost: off, one relaxed atomic load per operation. On, each thread appends
// to a buffer of its own (no lock); each stream operation enqueues its start
// and end marks on its stream: two timing events where the device offers
// event timing (resolved without waiting, when the session stops or the
// stream closes), else two host functions. The file is written when the
// session stops.
#pragma once

#include <keel/export.hpp>
#include <keel/result.hpp>

#include <cstdint>
#include <string>

namespace keel {

class Stream;

struct TraceOptions {
    // Where the JSON goes ("%p", "%r": see above).
    std::string path;
    // Start and end of each operation on its stream, from timing events
    // recorded around it where the device offers event timing, else from
    // host functions enqueued around it. Off: operations carry their
    // enqueue time only.
    bool device_times = true;
};

struct TraceReport {
    std::string path;           // the file written
    std::uint64_t events = 0;   // trace events in it
    std::uint64_t bytes = 0;    // its size
    std::uint64_t dropped = 0;  // records lost to full buffers
};

// A tracing session. Move-only; dropping it stops it (an error writing the
// file is logged). Send, not Sync.
class KEEL_API Trace {
public:
    // FAILED_PRECONDITION while another session (or KEEL_TRACE's) records;
    // INVALID_ARGUMENT for an empty path. The file is opened at stop().
    [[nodiscard]] static Result<Trace> start(TraceOptions options);

    Trace(const Trace&) = delete;
    Trace& operator=(const Trace&) = delete;
    Trace(Trace&& other) noexcept;
    Trace& operator=(Trace&& other) noexcept;
    ~Trace();

    // Stops recording and writes the file. Operations still in flight are
    // written with what is known of them (their enqueue). The session is
    // over afterwards either way.
    [[nodiscard]] Result<TraceReport> stop();

private:
    Trace() noexcept = default;
    bool active_ = false;
};

// Whether a session records now.
[[nodiscard]] KEEL_API bool tracing() noexcept;

// A named range of a stream's work, from the work enqueued on `stream` after
// the constructor to the work enqueued before the destructor: a track entry
// with its start and end on the stream, as keel's own operations have.
// `name` and `category` must be string literals (or otherwise outlive the
// process's tracing). Costs one relaxed load when tracing is off. Not
// movable; use on one thread.
struct TraceRangeInfo {
    std::uint64_t bytes = 0;
    std::int64_t rank = -1;  // -1: none
    std::int64_t peer = -1;  // -1: none
};

class KEEL_API TraceRange {
public:
    TraceRange(const Stream& stream, const char* category, const char* name, TraceRangeInfo info = {}) noexcept;
    TraceRange(const TraceRange&) = delete;
    TraceRange& operator=(const TraceRange&) = delete;
    ~TraceRange();

private:
    void* record_ = nullptr;
    const Stream* stream_ = nullptr;
};

// ---- memory history ------------------------------------------------------

// While on, each Buffer allocated remembers a tag: the innermost MemoryTag
// of the allocating thread, else the file and line of the Buffer::allocate
// call. MemoryPool::snapshot() shows each live block's tag
// (MemorySnapshot::to_json). Off by default; KEEL_MEMORY_HISTORY=1 turns it
// on for the whole process. Costs a lock per allocation and free while on.
KEEL_API void set_memory_history(bool on) noexcept;
[[nodiscard]] KEEL_API bool memory_history() noexcept;

// Tags the buffers this thread allocates while it lives (memory history).
// Nests; use on one thread, destroy in reverse order.
class KEEL_API MemoryTag {
public:
    explicit MemoryTag(std::string tag) noexcept;
    MemoryTag(const MemoryTag&) = delete;
    MemoryTag& operator=(const MemoryTag&) = delete;
    ~MemoryTag();

private:
    bool pushed_ = false;
};

}  // namespace keel
