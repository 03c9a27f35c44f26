#include "comm_diagnosis.hpp"

#include <algorithm>
#include <sstream>

namespace keel::comm {

std::string progress_line(const std::string& name, int size, const RankProgress& p) {
    return "[comm-progress] name=" + name + " rank=" + std::to_string(p.rank) + " size=" + std::to_string(size) +
           " enqueued=" + std::to_string(p.enqueued) + " waiting=" + std::to_string(p.waiting) + " op=" + p.op;
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
