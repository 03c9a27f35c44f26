// Writes a session as Chrome trace event JSON (the format Perfetto and
// chrome://tracing read): one process, a track per stream and per host
// thread, counters per device.
#include "trace/session.hpp"

#include <keel/environment.hpp>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <memory>
#include <set>
#include <algorithm>
#include <vector>
#include <string>

#include <unistd.h>

namespace keel::trace {

namespace {

// Host threads' tracks come after every stream's.
constexpr std::uint64_t kHostTrackBase = std::uint64_t{1} << 40;

class JsonOut {
public:
    explicit JsonOut(std::string& out) : out_(out) {}
    JsonOut& raw(std::string_view s) {
        out_.append(s);
        return *this;
    }
    JsonOut& number(std::uint64_t v) {
        char buf[24];
        auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
        out_.append(buf, end);
        return *this;
    }
    JsonOut& signed_number(std::int64_t v) {
        char buf[24];
        auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
        out_.append(buf, end);
        return *this;
    }
    // Nanoseconds as microseconds, exactly, without trailing zeros.
    JsonOut& micros(std::int64_t ns) {
        if (ns < 0) {
            out_ += '-';
            ns = -ns;
        }
        number(static_cast<std::uint64_t>(ns / 1000));
        int frac = static_cast<int>(ns % 1000);
        if (frac == 0) return *this;
        char digits[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                          static_cast<char>('0' + frac % 10)};
        std::size_t n = 4;
        while (digits[n - 1] == '0') --n;
        out_.append(digits, n);
        return *this;
    }
    JsonOut& string(std::string_view s) {
        out_ += '"';
        for (char c : s) {
            switch (c) {
                case '"': out_ += "\\\""; break;
                case '\\': out_ += "\\\\"; break;
                case '\n': out_ += "\\n"; break;
                case '\t': out_ += "\\t"; break;
                default:
                    if (static_cast<unsigned char>(c) < 0x20) {
                        char buf[8];
                        std::snprintf(buf, sizeof buf, "\\u%04x", c);
                        out_ += buf;
                    } else {
                        out_ += c;
                    }
            }
        }
        out_ += '"';
        return *this;
    }

private:
    std::string& out_;
};

struct EventWriter {
    std::string& out;
    std::uint64_t pid;
    std::int64_t origin_ns;  // the steady time written as ts 0
    std::uint64_t events = 0;

    JsonOut begin(const char* ph, std::uint64_t tid) {
        out += events == 0 ? "\n" : ",\n";
        ++events;
        JsonOut j(out);
        j.raw("{\"ph\":\"").raw(ph).raw("\",\"pid\":").number(pid).raw(",\"tid\":").number(tid);
        return j;
    }
    // A process-wide event (a counter): no track.
    JsonOut begin_process(const char* ph) {
        out += events == 0 ? "\n" : ",\n";
        ++events;
        JsonOut j(out);
        j.raw("{\"ph\":\"").raw(ph).raw("\",\"pid\":").number(pid);
        return j;
    }
    // A steady time as microseconds since the origin.
    JsonOut& at(JsonOut& j, std::int64_t steady_ns) { return j.micros(steady_ns - origin_ns); }
};

std::string op_name(const Record& r) {
    std::string name = r.kind == Kind::range ? std::string() : std::string(kind_name(r.kind));
    if (r.name != nullptr) {
        if (!name.empty()) name += ' ';
        name += r.name;
    }
    return name;
}

// The name starts with the operation's kind ("memset", "copy h2d (staged)",
// "kernel fill"): readers take the kind from it. A named range has its own
// category and "kind":"range".
void write_op(EventWriter& w, const Record& r, bool session_device_times) {
    const std::int64_t start = r.start_ns.load(std::memory_order_acquire);
    const std::int64_t end = r.end_ns.load(std::memory_order_acquire);
    const std::int64_t host_end = r.host_end_ns.load(std::memory_order_relaxed);
    const bool timed = start != 0 && end != 0 && end >= start;
    JsonOut j = w.begin("X", r.stream);
    j.raw(",\"ts\":");
    w.at(j, timed ? start : r.host_ns);
    j.raw(",\"dur\":").micros(timed ? end - start : 0);
    if (r.kind == Kind::range) j.raw(",\"cat\":").string(r.detail != nullptr ? r.detail : "range");
    j.raw(",\"name\":").string(op_name(r));
    j.raw(",\"args\":{");
    const char* sep = "";
    auto key = [&](const char* k) -> JsonOut& {
        j.raw(sep).raw("\"").raw(k).raw("\":");
        sep = ",";
        return j;
    };
    if (r.kind == Kind::range) key("kind").raw("\"range\"");
    if (r.bytes != 0) key("bytes").number(r.bytes);
    // The enqueue, where the slice does not start there already.
    if (timed) w.at(key("enq"), r.host_ns);
    if (host_end != 0) key("call").micros(host_end - r.host_ns);
    if (!timed && session_device_times) key("untimed").raw("1");
    if (r.kind == Kind::range) {
        if (r.a != static_cast<std::uint64_t>(-1)) key("rank").signed_number(static_cast<std::int64_t>(r.a));
        if (r.b != static_cast<std::uint64_t>(-1)) key("peer").signed_number(static_cast<std::int64_t>(r.b));
    }
    const std::int32_t status = r.status.load(std::memory_order_relaxed);
    if (status != 0) key("status").signed_number(status);
    j.raw("}}");
}

// Instants default to the thread's scope (no "s").
void write_instant(EventWriter& w, const Record& r) {
    JsonOut j = w.begin("i", r.stream);
    j.raw(",\"ts\":");
    w.at(j, r.host_ns);
    j.raw(",\"name\":").string(kind_name(r.kind));
    if (r.kind == Kind::hold_release) {
        // How long the hold kept its objects: from its enqueue to now.
        j.raw(",\"args\":{\"held\":").micros(r.host_ns - static_cast<std::int64_t>(r.b)).raw("}}");
        return;
    }
    j.raw(",\"args\":{\"bytes\":").number(r.bytes);
    char addr[24];
    std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(r.a));
    j.raw(",\"addr\":").string(addr);
    if (r.flags & kFlagCacheHit) j.raw(",\"hit\":1");
    if (r.flags & kFlagCacheMiss) j.raw(",\"hit\":0");
    if (r.flags & kFlagPending) j.raw(",\"pending\":1");
    j.raw("}}");
}

// The waited stream by its track id (the track's name says which it is).
void write_wait(EventWriter& w, const Record& r, std::uint64_t tid) {
    const std::int64_t end = r.host_end_ns.load(std::memory_order_relaxed);
    JsonOut j = w.begin("X", tid);
    j.raw(",\"ts\":");
    w.at(j, r.host_ns);
    j.raw(",\"dur\":").micros(end >= r.host_ns ? end - r.host_ns : 0);
    j.raw(",\"cat\":\"wait\",\"name\":").string(r.name ? r.name : "?");
    if (r.b != 0) j.raw(",\"args\":{\"stream\":").number(r.b).raw("}");
    j.raw("}");
}

// A device's memory counter: one event per change, written in time order
// per device, each series only when its value changed (a counter track
// keeps its last value).
struct CounterSample {
    std::int64_t ns;
    std::uint64_t allocated;
    std::uint64_t reserved;
};

void write_counters(EventWriter& w, std::map<std::string_view, std::vector<CounterSample>>& devices) {
    for (auto& [device, samples] : devices) {
        std::stable_sort(samples.begin(), samples.end(),
                         [](const CounterSample& x, const CounterSample& y) { return x.ns < y.ns; });
        const std::string name = "memory " + std::string(device);
        bool first = true;
        CounterSample last{};
        for (const CounterSample& s : samples) {
            const bool a = first || s.allocated != last.allocated;
            const bool r = first || s.reserved != last.reserved;
            if (!a && !r) continue;
            JsonOut j = w.begin_process("C");
            j.raw(",\"ts\":");
            w.at(j, s.ns);
            j.raw(",\"name\":").string(name).raw(",\"args\":{");
            if (a) j.raw("\"allocated\":").number(s.allocated);
            if (r) j.raw(a ? ",\"reserved\":" : "\"reserved\":").number(s.reserved);
            j.raw("}}");
            first = false;
            last = s;
        }
    }
}

void write_metadata(EventWriter& w, const char* what, std::uint64_t tid, std::string_view name) {
    JsonOut j = w.begin("M", tid);
    j.raw(",\"name\":\"").raw(what).raw("\",\"args\":{\"name\":").string(name).raw("}}");
}

void write_sort(EventWriter& w, std::uint64_t tid, std::uint64_t index) {
    JsonOut j = w.begin("M", tid);
    j.raw(",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":").number(index).raw("}}");
}

}  // namespace

Result<Written> write_session(const std::string& path, const SessionInfo& session,
                              const std::vector<std::shared_ptr<ThreadBuffer>>& buffers,
                              const std::map<std::uint64_t, std::string>& stream_names) {
    const std::uint64_t pid = static_cast<std::uint64_t>(::getpid());
    const std::optional<std::string_view> rank = env::foreign("RANK");
    std::string out;
    out.reserve(1 << 20);
    out += "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
    EventWriter w{out, pid, session.origin_ns};
    Written written;
    std::set<std::uint64_t> streams_seen;
    std::set<std::uint64_t> hosts_seen;
    std::map<std::string_view, std::vector<CounterSample>> counters;
    for (const auto& buffer : buffers) {
        written.dropped += buffer->dropped.exchange(0, std::memory_order_relaxed);
        const std::size_t n = buffer->published.load(std::memory_order_acquire);
        const std::uint64_t host_tid = kHostTrackBase + buffer->index;
        for (std::size_t i = 0; i < n; ++i) {
            const Record* chunk =
                buffer->chunks[i / ThreadBuffer::kChunkRecords].load(std::memory_order_acquire);
            if (chunk == nullptr) break;
            const Record& r = chunk[i % ThreadBuffer::kChunkRecords];
            if (r.session != session.id) continue;
            switch (r.kind) {
                case Kind::alloc:
                case Kind::free:
                case Kind::record_stream:
                case Kind::free_settled:
                case Kind::hold_release:
                    write_instant(w, r);
                    streams_seen.insert(r.stream);
                    break;
                case Kind::host_wait:
                    write_wait(w, r, host_tid);
                    hosts_seen.insert(buffer->index);
                    break;
                case Kind::memory_counter:
                    counters[r.detail != nullptr ? r.detail : "?"].push_back({r.host_ns, r.a, r.b});
                    break;
                default:
                    write_op(w, r, session.device_times);
                    streams_seen.insert(r.stream);
                    break;
            }
        }
    }
    write_counters(w, counters);
    // Track names: every stream named in the session, and any seen.
    std::string process = "keel pid " + std::to_string(pid);
    if (rank) process = "rank " + std::string(*rank) + " (pid " + std::to_string(pid) + ")";
    write_metadata(w, "process_name", 0, process);
    for (const auto& [id, name] : stream_names) streams_seen.insert(id);
    for (std::uint64_t id : streams_seen) {
        auto it = stream_names.find(id);
        write_metadata(w, "thread_name", id, it != stream_names.end() ? it->second : "stream " + std::to_string(id));
        write_sort(w, id, id);
    }
    for (const auto& buffer : buffers) {
        if (hosts_seen.count(buffer->index) == 0) continue;
        const std::uint64_t tid = kHostTrackBase + buffer->index;
        write_metadata(w, "thread_name", tid,
                       "host thread " + std::to_string(buffer->index) + " (tid " + std::to_string(buffer->os_tid) + ")");
        write_sort(w, tid, kHostTrackBase + buffer->index);
    }
    const std::int64_t steady = now_ns();
    const std::int64_t unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count();
    char host[256] = {};
    (void)::gethostname(host, sizeof host - 1);
    JsonOut j(out);
    j.raw("\n],\"otherData\":{\"producer\":\"keel\",\"clock\":\"steady\",\"pid\":").number(pid);
    if (rank) j.raw(",\"rank\":").string(*rank);
    j.raw(",\"host\":").string(host);
    j.raw(",\"unix_minus_steady_ns\":").signed_number(unix_ns - steady);
    // ts 0 of this file on the steady clock; "version" 2: times since it.
    j.raw(",\"steady_origin_ns\":").signed_number(session.origin_ns);
    j.raw(",\"version\":2,\"device_times\":").raw(session.device_times ? "true" : "false");
    j.raw(",\"dropped\":").number(written.dropped);
    j.raw("}}\n");
    written.events = w.events;
    written.bytes = out.size();

    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
    if (!file)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Trace::stop] cannot open '" + path + "' for writing");
    if (std::fwrite(out.data(), 1, out.size(), file.get()) != out.size() || std::fflush(file.get()) != 0)
        return Error(KEEL_STATUS_INTERNAL, "[Trace::stop] writing '" + path + "' failed");
    return written;
}

}  // namespace keel::trace
