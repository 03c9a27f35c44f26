#include "diagnose/report.hpp"

#include "diagnose/host_waits.hpp"
#include "diagnose/ledger.hpp"
#include "diagnose/sections.hpp"
#include "memory/stream_registry.hpp"
#include "plugin.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include <unistd.h>

namespace keel::doctor {

namespace {

struct StreamState {
    std::shared_ptr<StreamLedger> ledger;
    std::uint64_t enqueued = 0;
    std::uint64_t progress = 0;
    bool idle = true;
    std::vector<OpRecord> ops;  // blocking operations at or after `progress`
    // The analysis: the first operation the stream cannot pass.
    bool stuck = false;        // found one (else: busy on the device, or idle)
    std::uint64_t at = 0;
    std::string what;          // "op 0 (host function): running for 5.0 s"
    std::uint32_t next = 0;    // the stream it waits for, 0: none (a root)
    std::string root;          // why it is a root
    std::vector<std::uint64_t> holds;
};

std::string seconds(std::int64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ns) / 1e9);
    return buf;
}

std::string json_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 8);
    for (char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += c;
                }
        }
    }
    return out;
}

class Graph {
public:
    Graph() {
        for (auto& ledger : open_ledgers()) {
            StreamState s;
            s.ledger = ledger;
            s.enqueued = ledger->enqueued();
            s.progress = ledger->progress();
            if (s.progress < s.enqueued) ask_plugin(s);
            s.idle = s.progress >= s.enqueued;
            if (!s.idle) s.ops = ledger->blocking_ops(s.progress);
            streams_.emplace(ledger->id(), std::move(s));
        }
        waits_ = host_waits();
        for (const WaitView& w : waits_)
            if (w.note && w.inside != 0) notes_in_host_funcs_.emplace(w.inside, &w);
        for (auto& [id, s] : streams_) analyse(s);
    }

    [[nodiscard]] Diagnosis render(const std::string& why, std::string* json) const;

private:
    // The plugin says whether the stream has run everything: only then is
    // its progress known past the last host function it ran.
    static void ask_plugin(StreamState& s) {
        const StreamLedger& l = *s.ledger;
        if (l.device() == nullptr || l.handle() == nullptr) return;
        const memory::OpenStream open = memory::keep_open(l.handle(), l.generation(), memory::Match::exact);
        if (!open) {
            s.progress = s.enqueued;  // closed: its work is done
            return;
        }
        std::int32_t done = 0;
        if (l.device()->api().stream_query(l.handle(), &done).ok() && done != 0) {
            s.ledger->passed(s.enqueued);
            s.progress = std::max(s.progress, s.enqueued);
        }
    }

    [[nodiscard]] const StreamState* find(std::uint32_t id) const {
        auto it = streams_.find(id);
        return it == streams_.end() ? nullptr : &it->second;
    }
    // Whether the operation at `site` is known to have run (a stream the
    // runtime no longer has open has run all its work: closing waits).
    [[nodiscard]] bool complete(Site site) const {
        if (site == 0) return true;
        const StreamState* s = find(site_stream(site));
        return s == nullptr || site_op(site) < s->progress;
    }
    [[nodiscard]] std::string name(std::uint32_t id) const {
        const StreamState* s = find(id);
        return s != nullptr ? s->ledger->name() : "stream " + std::to_string(id) + " (closed)";
    }
    [[nodiscard]] std::string op_of(Site site) const {
        const StreamState* s = find(site_stream(site));
        std::string text = "op " + std::to_string(site_op(site)) + " of " + name(site_stream(site));
        if (s != nullptr) {
            for (const OpRecord& r : s->ops)
                if (r.index == site_op(site)) return text + " (" + describe(r.kind) + ")";
        }
        return text;
    }

    void analyse(StreamState& s) {
        if (s.idle) return;
        const std::int64_t now = now_ns();
        for (const OpRecord& r : s.ops) {
            if (r.kind == OpKind::hold) s.holds.push_back(r.index);
            if (s.stuck) continue;
            const std::string op = "op " + std::to_string(r.index) + " (" + describe(r.kind) + ")";
            switch (r.kind) {
                case OpKind::host_func: {
                    if (r.state != HostFuncState::running) break;
                    s.stuck = true;
                    s.at = r.index;
                    s.what = op + ": running for " + seconds(now - r.started_ns);
                    auto note = notes_in_host_funcs_.find(make_site(s.ledger->id(), r.index));
                    if (note == notes_in_host_funcs_.end()) {
                        s.root = "the host function has not returned, and keel cannot see what it waits for "
                                 "(declare it with keel::BlockedOn)";
                    } else if (note->second->target == 0) {
                        s.what += ", blocked on \"" + note->second->where + "\"";
                        s.root = "the host function is blocked on \"" + note->second->where + "\", outside keel";
                    } else {
                        s.next = site_stream(note->second->target);
                        s.what += ", blocked on " + (s.next == s.ledger->id() ? std::string("its own stream")
                                                                                 : name(s.next)) +
                                  " (\"" + note->second->where + "\")";
                    }
                    break;
                }
                case OpKind::wait_event:
                case OpKind::wait_fence:
                case OpKind::order_after:
                    if (complete(r.target)) break;
                    s.stuck = true;
                    s.at = r.index;
                    s.next = site_stream(r.target);
                    s.what = op + ": waits for " + op_of(r.target);
                    break;
                default: break;
            }
        }
        if (!s.stuck) {
            s.at = s.progress;
            s.what = "op " + std::to_string(s.progress) + " (" + describe(s.ledger->kind_at(s.progress)) +
                     ") has not finished";
            s.root = "the device has not finished " + s.what.substr(0, s.what.find(" has")) +
                     " (no wait or host function keeps it: it is running, or the device is stuck)";
        }
    }

    std::map<std::uint32_t, StreamState> streams_;
    std::vector<WaitView> waits_;
    std::map<Site, const WaitView*> notes_in_host_funcs_;
};

Diagnosis Graph::render(const std::string& why, std::string* json) const {
    Diagnosis d;
    std::ostringstream out;
    const std::int64_t now = now_ns();
    out << "[keel::diagnose] " << why << "\n";

    std::size_t pending = 0;
    for (const auto& [id, s] : streams_) pending += s.idle ? 0 : 1;
    out << "streams: " << streams_.size() << " open, " << pending << " with pending work\n";
    for (const auto& [id, s] : streams_) {
        if (s.idle) continue;
        out << "  " << s.ledger->name() << ": " << s.enqueued << " ops enqueued, " << s.progress
            << " known done; first pending op " << s.progress << " (" << describe(s.ledger->kind_at(s.progress))
            << ")";
        if (s.stuck) out << "; cannot pass " << s.what;
        out << "\n";
        if (!s.holds.empty()) {
            out << "    holds not released: ";
            for (std::size_t i = 0; i < s.holds.size(); ++i)
                out << (i ? ", " : "") << "op " << s.holds[i];
            out << " (each released once the stream passes it; the stream is stopped at op " << s.at << ")\n";
        }
    }

    // Host threads, and the edges they start from.
    struct Start {
        std::string label;
        std::uint32_t stream;
    };
    std::vector<Start> starts;
    bool header = false;
    for (const WaitView& w : waits_) {
        if (w.note && w.inside != 0) continue;  // shown with its host function
        if (!header) out << "host threads waiting:\n";
        header = true;
        out << "  thread " << w.thread << " has waited " << seconds(now - w.since_ns) << " ";
        if (w.note) {
            out << "on \"" << w.where << "\"";
            if (w.target != 0) out << " (" << name(site_stream(w.target)) << ")";
        } else {
            out << "in " << w.where;
            if (w.target != 0) out << " for " << op_of(w.target);
        }
        out << "\n";
        if (w.target != 0 && !complete(w.target))
            starts.push_back({"thread " + std::to_string(w.thread) + " (" + w.where + ")", site_stream(w.target)});
    }
    for (const auto& [id, s] : streams_)
        if (!s.idle) starts.push_back({"", id});

    // Chains: follow each start to its root or round a cycle.
    std::set<std::uint32_t> shown;
    std::set<std::set<std::uint32_t>> cycles;
    std::vector<std::string> chains, roots, cycle_lines;
    for (const Start& start : starts) {
        if (start.label.empty() && shown.count(start.stream)) continue;
        std::vector<std::uint32_t> path;
        std::string chain = start.label;
        std::uint32_t at = start.stream;
        bool cyclic = false;
        while (at != 0) {
            const StreamState* s = find(at);
            if (s == nullptr || s->idle) break;
            auto seen = std::find(path.begin(), path.end(), at);
            if (seen != path.end()) {
                cyclic = true;
                std::set<std::uint32_t> members(seen, path.end());
                if (cycles.insert(members).second) {
                    // Told from its lowest stream id, whatever the start.
                    std::vector<std::uint32_t> ring(seen, path.end());
                    std::rotate(ring.begin(), std::min_element(ring.begin(), ring.end()), ring.end());
                    std::string c = "cycle: ";
                    for (std::uint32_t member : ring) {
                        const StreamState* m = find(member);
                        c += m->ledger->name() + " " + m->what + " -> ";
                    }
                    c += "back to " + find(ring.front())->ledger->name() + ": none of these can move";
                    cycle_lines.push_back(std::move(c));
                }
                chain += (chain.empty() ? "" : " -> ") + s->ledger->name() + " (cycle)";
                break;
            }
            path.push_back(at);
            shown.insert(at);
            chain += (chain.empty() ? "" : " -> ") + s->ledger->name() + " op " + std::to_string(s->at);
            if (s->next == 0) {
                roots.push_back("root: " + s->ledger->name() + " " + s->what + ": " + s->root);
                break;
            }
            at = s->next;
        }
        if (path.size() + (start.label.empty() ? 0 : 1) > 1 || cyclic) chains.push_back(chain);
    }
    std::sort(roots.begin(), roots.end());
    roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
    if (!chains.empty()) {
        out << "wait-for chains:\n";
        for (const auto& c : chains) out << "  " << c << "\n";
    }
    for (const auto& c : cycle_lines) out << c << "\n";
    for (const auto& r : roots) out << r << "\n";

    const std::vector<std::string> extra = section_reports();
    for (const auto& e : extra) out << e << (e.empty() || e.back() == '\n' ? "" : "\n");

    // A section names a cycle it found (through other processes, say) in a
    // line of its own that starts with "cycle".
    const bool section_cycle = std::any_of(extra.begin(), extra.end(), [](const std::string& e) {
        std::istringstream lines(e);
        for (std::string line; std::getline(lines, line);) {
            const std::size_t first = line.find_first_not_of(' ');
            if (first != std::string::npos && line.compare(first, 5, "cycle") == 0) return true;
        }
        return false;
    });
    d.cycle = !cycles.empty() || section_cycle;
    bool stuck_stream = false;
    for (const auto& [id, s] : streams_) stuck_stream = stuck_stream || s.stuck;
    d.blocked = d.cycle || stuck_stream;
    if (pending == 0 && waits_.empty()) out << "no stream has pending work and no host thread waits: no hang\n";
    else if (!d.cycle) out << "no cycle\n";
    d.text = out.str();
    if (!d.text.empty() && d.text.back() == '\n') d.text.pop_back();

    if (json != nullptr) {
        std::ostringstream j;
        j << "{\"format\":\"keel-hang-report\",\"version\":1,\"pid\":" << ::getpid() << ",\"why\":\""
          << json_escape(why) << "\",\"blocked\":" << (d.blocked ? "true" : "false")
          << ",\"cycle\":" << (d.cycle ? "true" : "false") << ",\"streams\":[";
        bool first = true;
        for (const auto& [id, s] : streams_) {
            j << (first ? "" : ",") << "{\"name\":\"" << json_escape(s.ledger->name()) << "\",\"enqueued\":"
              << s.enqueued << ",\"done\":" << s.progress << ",\"idle\":" << (s.idle ? "true" : "false");
            if (!s.idle) {
                j << ",\"stopped_at\":" << s.at << ",\"what\":\"" << json_escape(s.what) << "\"";
                if (s.next != 0) j << ",\"waits_for\":\"" << json_escape(name(s.next)) << "\"";
                else j << ",\"root\":\"" << json_escape(s.root) << "\"";
            }
            j << "}";
            first = false;
        }
        j << "],\"sections\":[";
        first = true;
        for (const auto& e : extra) {
            j << (first ? "" : ",") << "\"" << json_escape(e) << "\"";
            first = false;
        }
        j << "],\"text\":\"" << json_escape(d.text) << "\"}\n";
        *json = j.str();
    }
    return d;
}

}  // namespace

Diagnosis build_diagnosis(const std::string& why, std::string* json) {
    try {
        const Graph graph;
        return graph.render(why, json);
    } catch (const std::exception& e) {
        Diagnosis d;
        d.text = std::string("[keel::diagnose] ") + why + ": the diagnosis failed: " + e.what();
        return d;
    }
}

}  // namespace keel::doctor
