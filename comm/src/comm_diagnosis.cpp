#include "comm_diagnosis.hpp"

#include "key_owner.hpp"

#include <unistd.h>

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace keel::comm {

namespace {

// A value in a progress line: one word.
std::string word_of(std::string value) {
    if (value.empty()) return "-";
    std::replace(value.begin(), value.end(), ' ', '_');
    return value;
}

std::string value_of(const std::string& word) { return word == "-" ? std::string() : word; }

}  // namespace

std::string progress_line(const std::string& name, int size, const RankProgress& p) {
    std::string line = "[comm-progress] name=" + name + " rank=" + std::to_string(p.rank) +
                       " size=" + std::to_string(size) + " enqueued=" + std::to_string(p.enqueued) +
                       " waiting=" + std::to_string(p.waiting) + " op=" + word_of(p.op) +
                       " process=" + word_of(p.process);
    if (p.next >= 0) line += " next=" + std::to_string(p.next) + " next_op=" + word_of(p.next_op);
    if (!p.blocked_comm.empty())
        line += " blocked_comm=" + word_of(p.blocked_comm) + " blocked_index=" + std::to_string(p.blocked_index) +
                " blocked_op=" + word_of(p.blocked_op);
    return line;
}

bool parse_progress(const std::string& line, RankProgress& out) {
    std::istringstream in(line);
    std::string word;
    bool rank = false, enqueued = false;
    try {
        while (in >> word) {
            const auto eq = word.find('=');
            if (eq == std::string::npos) continue;
            const std::string key = word.substr(0, eq), value = word.substr(eq + 1);
            if (key == "rank") out.rank = std::stoi(value), rank = true;
            else if (key == "enqueued") out.enqueued = std::stoull(value), enqueued = true;
            else if (key == "waiting") out.waiting = std::stoll(value);
            else if (key == "op") out.op = value;
            else if (key == "process") out.process = value_of(value);
            else if (key == "next") out.next = std::stoll(value);
            else if (key == "next_op") out.next_op = value_of(value);
            else if (key == "blocked_comm") out.blocked_comm = value_of(value);
            else if (key == "blocked_index") out.blocked_index = std::stoll(value);
            else if (key == "blocked_op") out.blocked_op = value_of(value);
        }
    } catch (...) {
        return false;
    }
    return rank && enqueued;
}

std::string diagnosis_text(const std::string& name, int rank, int size, const RankProgress& mine,
                           const std::vector<RankProgress>& others, std::chrono::milliseconds waited) {
    std::ostringstream out;
    out << "communicator '" << name << "' rank " << rank << " of " << size << ": ";
    if (mine.waiting >= 0) out << "waits in " << mine.op << " #" << mine.waiting;
    else out << "runs no operation";
    out << " (" << mine.enqueued << " operations enqueued)\n";
    std::vector<const RankProgress*> by_rank(static_cast<std::size_t>(size), nullptr);
    by_rank[static_cast<std::size_t>(rank)] = &mine;
    for (const RankProgress& p : others)
        if (p.rank >= 0 && p.rank < size && p.rank != rank) by_rank[static_cast<std::size_t>(p.rank)] = &p;
    for (int r = 0; r < size; ++r) {
        const RankProgress* p = by_rank[static_cast<std::size_t>(r)];
        if (p != nullptr) out << "  " << progress_line(name, size, *p) << "\n";
    }
    // Where the ranks that wait are: the furthest operation any of them runs.
    std::int64_t index = -1;
    std::string op;
    for (const RankProgress* p : by_rank)
        if (p != nullptr && p->waiting > index) index = p->waiting, op = p->op;
    if (index < 0) {
        out << "  no rank that reported waits in an operation of this communicator";
        return out.str();
    }
    std::vector<std::string> waiting, missing;
    for (int r = 0; r < size; ++r) {
        const RankProgress* p = by_rank[static_cast<std::size_t>(r)];
        if (p == nullptr) {
            missing.push_back("rank " + std::to_string(r) + " (no report within " + std::to_string(waited.count()) +
                              " ms: it is not blocked in keel, so it has not enqueued " + op + " #" +
                              std::to_string(index) + ", or it is blocked outside keel)");
        } else if (p->waiting == index) {
            waiting.push_back(std::to_string(r));
        } else if (p->enqueued <= static_cast<std::uint64_t>(index)) {
            missing.push_back("rank " + std::to_string(r) + (r == rank ? " (this rank enqueued " : " (enqueued ") +
                              std::to_string(p->enqueued) + " operations, the last #" +
                              std::to_string(static_cast<std::int64_t>(p->enqueued) - 1) + ")");
        } else if (!p->blocked_comm.empty()) {
            missing.push_back("rank " + std::to_string(r) + " (its " + p->next_op + " #" + std::to_string(p->next) +
                              " is queued on its stream behind communicator '" + p->blocked_comm + "' " +
                              p->blocked_op + " #" + std::to_string(p->blocked_index) + ", which waits for its peers)");
        }
    }
    out << "  ranks waiting in " << op << " #" << index << ": ";
    for (std::size_t i = 0; i < waiting.size(); ++i) out << (i ? ", " : "") << waiting[i];
    out << "\n";
    if (missing.empty()) {
        out << "  every rank has arrived at " << op << " #" << index;
    } else {
        out << "  ranks not arrived at " << op << " #" << index << " of communicator '" << name << "': ";
        for (std::size_t i = 0; i < missing.size(); ++i) out << (i ? "; " : "") << missing[i];
    }
    return out.str();
}

std::string this_process() { return this_host() + ":" + std::to_string(::getpid()); }

namespace {

// Leaf locks: nothing is called while they are held.
std::mutex& gates_mutex() {
    static std::mutex m;
    return m;
}
std::map<keel_stream, RunningGate>& gates() {
    static std::map<keel_stream, RunningGate> g;
    return g;
}

struct RememberedReports {
    std::vector<RankProgress> reports;
    std::chrono::steady_clock::time_point when;
};
std::mutex& reports_mutex() {
    static std::mutex m;
    return m;
}
std::map<std::string, RememberedReports>& remembered() {
    static std::map<std::string, RememberedReports> r;
    return r;
}

}  // namespace

void gate_started(keel_stream stream, const std::string& comm, const char* op, std::uint64_t index) {
    std::lock_guard lock(gates_mutex());
    gates()[stream] = RunningGate{comm, op, index};
}

void gate_ended(keel_stream stream) {
    std::lock_guard lock(gates_mutex());
    gates().erase(stream);
}

std::optional<RunningGate> running_gate(keel_stream stream) {
    std::lock_guard lock(gates_mutex());
    auto it = gates().find(stream);
    if (it == gates().end()) return std::nullopt;
    return it->second;
}

void remember_reports(const std::string& name, const std::vector<RankProgress>& reports) {
    std::lock_guard lock(reports_mutex());
    remembered()[name] = RememberedReports{reports, std::chrono::steady_clock::now()};
}

std::string cross_communicator_cycle() {
    std::map<std::string, std::vector<RankProgress>> views;
    {
        std::lock_guard lock(reports_mutex());
        const auto now = std::chrono::steady_clock::now();
        for (const auto& [name, r] : remembered())
            if (now - r.when < std::chrono::minutes(1)) views[name] = r.reports;
    }
    // Nodes: (process, communicator). An edge says why a node cannot move:
    // it waits in an operation for a rank that has not arrived, or its next
    // operation is queued behind another communicator's on its stream.
    using Node = std::pair<std::string, std::string>;
    struct Edge {
        Node to;
        std::string why;
    };
    std::map<Node, std::vector<Edge>> edges;
    for (const auto& [name, reports] : views) {
        for (const RankProgress& p : reports) {
            if (p.process.empty()) continue;
            const Node from{p.process, name};
            if (p.waiting >= 0) {
                for (const RankProgress& q : reports)
                    if (q.rank != p.rank && !q.process.empty() && q.waiting != p.waiting)
                        edges[from].push_back({{q.process, name},
                                               "rank " + std::to_string(p.rank) + " of '" + name + "' waits in " +
                                                   p.op + " #" + std::to_string(p.waiting) + " for rank " +
                                                   std::to_string(q.rank)});
            } else if (!p.blocked_comm.empty() && views.count(p.blocked_comm) != 0) {
                edges[from].push_back({{p.process, p.blocked_comm},
                                       "rank " + std::to_string(p.rank) + " of '" + name + "' has " + p.next_op +
                                           " #" + std::to_string(p.next) + " queued behind '" + p.blocked_comm +
                                           "' " + p.blocked_op + " #" + std::to_string(p.blocked_index) +
                                           " on its stream"});
            }
        }
    }
    // A cycle through a node of this process, found by a depth-first walk.
    const std::string me = this_process();
    std::vector<const Edge*> path;
    std::set<Node> on_path;
    std::string found;
    std::function<bool(const Node&, const Node&)> walk = [&](const Node& at, const Node& start) -> bool {
        auto it = edges.find(at);
        if (it == edges.end()) return false;
        for (const Edge& e : it->second) {
            path.push_back(&e);
            if (e.to == start) return true;
            if (on_path.insert(e.to).second) {
                if (walk(e.to, start)) return true;
                on_path.erase(e.to);
            }
            path.pop_back();
        }
        return false;
    };
    for (const auto& [node, out] : edges) {
        if (node.first != me) continue;
        path.clear();
        on_path = {node};
        if (!walk(node, node)) continue;
        std::set<std::string> comms;
        for (const Edge* e : path) comms.insert(e->to.second);
        if (comms.size() < 2) continue;  // within one communicator the per-communicator text says it
        found = "cycle across communicators: ";
        for (std::size_t i = 0; i < path.size(); ++i) found += (i ? " -> " : "") + path[i]->why;
        found += " -> back to the start";
        break;
    }
    return found;
}

std::vector<RankProgress> exchange_progress(const Store& store, const std::string& name, int size,
                                            const RankProgress& mine, std::chrono::milliseconds patience) {
    const std::string prefix = name + "/diagnose/";
    const std::string line = progress_line(name, size, mine);
    (void)store.erase(prefix + std::to_string(mine.rank));
    (void)store.set(prefix + std::to_string(mine.rank), std::as_bytes(std::span(line.data(), line.size())));
    std::vector<RankProgress> out;
    const auto end = std::chrono::steady_clock::now() + patience;
    for (int r = 0; r < size; ++r) {
        if (r == mine.rank) continue;
        const auto left = std::max(std::chrono::milliseconds(1),
                                   std::chrono::duration_cast<std::chrono::milliseconds>(
                                       end - std::chrono::steady_clock::now()));
        auto value = store.get(prefix + std::to_string(r), left);
        if (!value.ok()) continue;
        const std::string text(reinterpret_cast<const char*>(value->data()), value->size());
        RankProgress p;
        if (parse_progress(text, p)) out.push_back(p);
    }
    return out;
}

}  // namespace keel::comm
