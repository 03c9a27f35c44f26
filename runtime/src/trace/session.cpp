#include "trace/session.hpp"

#include "trace/event_times.hpp"

#include <keel/base/no_destructor.hpp>

#include <keel/environment.hpp>

#include <algorithm>
#include <new>
#include <utility>

#include <sys/syscall.h>
#include <unistd.h>

namespace keel::trace {

Registry& registry() {
    // Never destroyed: marks run on plugin threads and threads end their
    // buffers during exit, after static destructors may have run.
    static base::NoDestructor<Registry> instance;
    return instance.get();
}

void Registry::add(const std::shared_ptr<ThreadBuffer>& buffer) {
    std::lock_guard lock(mu_);
    buffer->index = next_thread_++;
    buffer->os_tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
    buffers_.push_back(buffer);
}

const char* Registry::intern(std::string_view text) {
    std::lock_guard lock(mu_);
    if (auto it = text_.find(text); it != text_.end()) return it->data();
    const std::string& stored = text_storage_.emplace_back(text);
    text_.insert(stored);
    return stored.c_str();
}

void Registry::name_stream(std::uint32_t session, std::uint64_t id, const std::string& device) {
    std::lock_guard lock(mu_);
    if (stream_names_session_ != session) {
        stream_names_.clear();
        stream_names_session_ = session;
    }
    stream_names_.try_emplace(id, device + " stream " + std::to_string(id));
}

bool Registry::active() {
    std::lock_guard lock(session_mu_);
    return active_;
}

Result<void> Registry::start(SessionOptions options) {
    if (options.path.empty()) return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Trace::start] the path is empty");
    if (!kHooksCompiledIn)
        return Error(KEEL_STATUS_UNIMPLEMENTED,
                     "[Trace::start] this build of keel compiled its tracing hooks out (KEEL_TRACE_HOOKS=OFF)");
    std::lock_guard lock(session_mu_);
    if (active_)
        return Error(KEEL_STATUS_FAILED_PRECONDITION,
                     "[Trace::start] a session already records into " + options_.path +
                         " (one session at a time per process; KEEL_TRACE starts one for the whole process)");
    options_ = std::move(options);
    active_ = true;
    ++session_;
    started_ns_ = now_ns();
    begin_session(session_, options_.device_times);
    return ok();
}

Result<TraceReport> Registry::stop() {
    std::lock_guard session_lock(session_mu_);
    if (!active_) return Error(KEEL_STATUS_FAILED_PRECONDITION, "[Trace::stop] no session records");
    end_session();
    active_ = false;
    // Event-timed operations get what their events tell by now (no wait).
    finish_stream_times();
    std::vector<std::shared_ptr<ThreadBuffer>> buffers;
    std::map<std::uint64_t, std::string> names;
    {
        std::lock_guard lock(mu_);
        buffers = buffers_;
        if (stream_names_session_ == session_) names = stream_names_;
        // Buffers of threads that ended go once no mark can still write into them.
        std::erase_if(buffers_, [](const std::shared_ptr<ThreadBuffer>& b) {
            return !b->alive.load(std::memory_order_acquire) && b->pending.load(std::memory_order_acquire) == 0;
        });
    }
    KEEL_TRY_ASSIGN(Written written, write_session(options_.path, SessionInfo{session_, started_ns_, options_.device_times}, buffers, names));
    TraceReport report;
    report.path = options_.path;
    report.events = written.events;
    report.bytes = written.bytes;
    report.dropped = written.dropped;
    return report;
}

std::string resolve_path(std::string_view pattern) {
    const std::string pid = std::to_string(::getpid());
    const std::optional<std::string_view> rank = env::foreign("RANK");
    std::string out;
    bool had_rank = false;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '%' && i + 1 < pattern.size() && (pattern[i + 1] == 'p' || pattern[i + 1] == 'r')) {
            if (pattern[i + 1] == 'p') {
                out += pid;
            } else {
                out += rank ? std::string(*rank) : std::string("0");
                had_rank = true;
            }
            ++i;
            continue;
        }
        out += pattern[i];
    }
    if (rank && !had_rank) {
        const std::size_t slash = out.rfind('/');
        const std::size_t dot = out.rfind('.');
        const std::string tag = ".rank" + std::string(*rank);
        if (dot != std::string::npos && (slash == std::string::npos || dot > slash))
            out.insert(dot, tag);
        else
            out += tag;
    }
    return out;
}

}  // namespace keel::trace
