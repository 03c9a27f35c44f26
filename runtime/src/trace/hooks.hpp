// The runtime's tracing hooks: one line at each call site, one relaxed load
// when no session records (trace/recorder.hpp).
#pragma once

#include "trace/recorder.hpp"

#include <keel/keel.h>

#include <cstdint>
#include <string_view>

namespace keel {
class Stream;
}  // namespace keel

namespace keel::detail {
class PluginApi;
}  // namespace keel::detail

namespace keel::memory {
class MemoryCore;
}  // namespace keel::memory

namespace keel::trace {

class StreamTimes;

// An operation enqueued on a stream, from the constructor (before the
// enqueue) to the destructor (after it): its enqueue time, the host time of
// the call, and, with device times on, its start and end on the stream:
// through timing events where the device offers them (event_times.hpp),
// else through host-function marks.
// More about an operation, written before its record is published.
struct OpInfo {
    std::string_view interned_name;  // a name that may not outlive the call (a kernel's)
    const char* category = nullptr;  // static text
    std::uint64_t a = 0;
    std::uint64_t b = 0;
};

class OpScope {
public:
    OpScope(const Stream& stream, Kind kind, std::uint64_t bytes, const char* name = nullptr) noexcept {
        if (on()) [[unlikely]] begin(stream, kind, bytes, name, nullptr);
    }
    OpScope(const Stream& stream, Kind kind, std::uint64_t bytes, const char* name, const OpInfo& info) noexcept {
        if (on()) [[unlikely]] begin(stream, kind, bytes, name, &info);
    }
    OpScope(const OpScope&) = delete;
    OpScope& operator=(const OpScope&) = delete;
    ~OpScope() {
        if (record_ != nullptr) [[unlikely]] end();
    }
    // What the record is, for a caller that fills in more (TraceRange).
    [[nodiscard]] Record* record() const noexcept { return record_; }
    // Hands the record over: the destructor no longer ends it.
    Record* release() noexcept {
        Record* r = record_;
        record_ = nullptr;
        return r;
    }

    // The end of a record handed over with release() (`times`: the stream's
    // event timing, null for host-function marks).
    static void end(Record* record, const detail::PluginApi* api, keel_stream stream, StreamTimes* times) noexcept;
    [[nodiscard]] const detail::PluginApi* api() const noexcept { return api_; }
    [[nodiscard]] keel_stream stream() const noexcept { return stream_; }

private:
    void begin(const Stream& stream, Kind kind, std::uint64_t bytes, const char* name, const OpInfo* info) noexcept;
    void end() noexcept { end(record_, api_, stream_, times_); }

    Record* record_ = nullptr;
    StreamTimes* times_ = nullptr;  // set when the start went through an event
    const detail::PluginApi* api_ = nullptr;
    keel_stream stream_ = nullptr;
};

// A host thread waiting, from the constructor to the destructor: on the
// thread's track, naming what it waited for.
class WaitScope {
public:
    WaitScope(const char* what, std::uint64_t stream_id) noexcept {
        if (on()) [[unlikely]] {
            start_ = now_ns();
            what_ = what;
            stream_ = stream_id;
        }
    }
    explicit WaitScope(const char* what, const Stream& stream) noexcept;
    WaitScope(const WaitScope&) = delete;
    WaitScope& operator=(const WaitScope&) = delete;
    ~WaitScope() {
        if (start_ != 0) [[unlikely]] end();
    }

private:
    void end() noexcept;
    std::int64_t start_ = 0;
    const char* what_ = nullptr;
    std::uint64_t stream_ = 0;
};

// Instants of the memory machinery on the stream's track, with the
// device's allocated and reserved bytes after them (only call while on()).
void allocation(memory::MemoryCore& core, keel_stream stream, std::uint64_t bytes, keel_device_addr addr) noexcept;
void deallocation(memory::MemoryCore& core, keel_stream stream, std::uint64_t bytes, keel_device_addr addr,
                  bool pending) noexcept;
void record_stream(keel_stream stream, std::uint64_t bytes, keel_device_addr addr) noexcept;
// A pending free's block became reusable: its uses on other streams are done.
// `stream_id`: the stream's generation.
void free_settled(std::uint64_t stream_id, std::uint64_t bytes, keel_device_addr addr) noexcept;
// What a hold kept (held since `held_ns`) is released now.
void hold_released(keel_stream stream, std::int64_t held_ns) noexcept;
// A thread-local note from the allocator to the allocation hook.
void note_cache_hit(bool hit) noexcept;
[[nodiscard]] bool last_cache_hit() noexcept;

}  // namespace keel::trace
