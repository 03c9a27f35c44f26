// The recorder's process-wide state: every thread's buffer, the interned
// text, the names of the session's streams, and starting, stopping and
// writing a session.
//
// Threads: Sync. The registry's mutex guards the buffer list, the text and
// the names; it is taken once per thread, stream and session, never per
// record.
#pragma once

#include "trace/recorder.hpp"

#include <keel/result.hpp>
#include <keel/trace.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace keel::trace {

// A thread's records: chunks that never move, appended by the thread alone,
// published through `published` (release) for the writer at stop.
struct ThreadBuffer {
    static constexpr std::size_t kChunkRecords = 2048;
    static constexpr std::size_t kMaxChunks = 8192;  // 16 Mi records per thread and session

    ThreadBuffer();
    ThreadBuffer(const ThreadBuffer&) = delete;
    ThreadBuffer& operator=(const ThreadBuffer&) = delete;
    ~ThreadBuffer();

    std::unique_ptr<std::atomic<Record*>[]> chunks;
    std::size_t head = 0;        // the thread's own
    std::uint32_t session = 0;   // the thread's own: the session of its records
    std::atomic<std::size_t> published{0};
    std::atomic<std::int64_t> pending{0};  // marks enqueued that have not run
    std::atomic<std::uint64_t> dropped{0};
    std::atomic<bool> alive{true};
    std::uint64_t index = 0;     // the host thread's number in the process (its track)
    std::uint64_t os_tid = 0;
};

class Registry {
public:
    void add(const std::shared_ptr<ThreadBuffer>& buffer);
    [[nodiscard]] const char* intern(std::string_view text);
    void name_stream(std::uint32_t session, std::uint64_t id, const std::string& device);

    // Starts session options.path; FAILED_PRECONDITION while one records.
    [[nodiscard]] Result<void> start(SessionOptions options);
    // Stops and writes the session.
    [[nodiscard]] Result<TraceReport> stop();
    [[nodiscard]] bool active();

private:
    std::mutex mu_;
    std::vector<std::shared_ptr<ThreadBuffer>> buffers_;
    std::uint64_t next_thread_ = 1;
    std::unordered_set<std::string_view> text_;
    std::deque<std::string> text_storage_;
    std::map<std::uint64_t, std::string> stream_names_;  // this session's
    std::uint32_t stream_names_session_ = 0;
    // Sessions start and stop one at a time.
    std::mutex session_mu_;
    bool active_ = false;
    std::uint32_t session_ = 0;
    std::int64_t started_ns_ = 0;
    SessionOptions options_;
};

[[nodiscard]] Registry& registry();

// The recorder's switch (recorder.cpp).
void begin_session(std::uint32_t session, bool device_times) noexcept;
void end_session() noexcept;

// The JSON of a session (writer.cpp).
struct Written {
    std::uint64_t events = 0;
    std::uint64_t bytes = 0;
    std::uint64_t dropped = 0;
};
struct SessionInfo {
    std::uint32_t id = 0;
    std::int64_t origin_ns = 0;  // steady time of its start: ts 0 in the file
    bool device_times = true;
};
[[nodiscard]] Result<Written> write_session(const std::string& path, const SessionInfo& session,
                                            const std::vector<std::shared_ptr<ThreadBuffer>>& buffers,
                                            const std::map<std::uint64_t, std::string>& stream_names);

// "%p" -> process id, "%r" -> RANK; with RANK set and no "%r", ".rank<r>"
// before the extension.
[[nodiscard]] std::string resolve_path(std::string_view pattern);

}  // namespace keel::trace
