// The accesses the checker remembers for one allocation, by byte range: for
// each range, the last write and the reads since it (one per stream: a
// stream's later read supersedes its earlier ones). An interval map of
// disjoint segments, so checking or recording an access costs O(log n + k)
// for n segments of which k overlap it; a write collapses what it covers
// into one segment, and adjacent segments with the same history merge.
//
// Not thread-safe: the checker's lock guards it.
#pragma once

#include "op_ref.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace keel::cpu {

// One operation's access to a byte range, as the checker remembers it.
struct AccessRecord {
    OpRef op;
    std::uint64_t tick = 0;   // the op's entry in its stream's vector clock
    std::uint64_t begin = 0;  // the accessed range: offsets in the allocation
    std::uint64_t end = 0;
    const char* role = "";  // "source", "destination", or a kernel parameter
    bool write = false;
};

class AccessMap {
public:
    // The first remembered access overlapping [begin, end) that conflicts
    // with it (a write conflicts with everything, a read with writes) and
    // that `ordered(record)` says is not ordered before it.
    template <class Ordered>
    [[nodiscard]] const AccessRecord* find_conflict(std::uint64_t begin, std::uint64_t end, bool write,
                                                    Ordered&& ordered) const {
        for (auto it = first_overlap(begin); it != segments_.end() && it->first < end; ++it) {
            const Segment& s = it->second;
            if (s.write && !ordered(*s.write)) return &*s.write;
            if (write)
                for (const AccessRecord& r : s.reads)
                    if (!ordered(r)) return &r;
        }
        return nullptr;
    }

    // Remembers `a`, and forgets (where it looks) what `stale(record)` says
    // every later access is ordered after anyway.
    template <class Stale>
    void record(const AccessRecord& a, Stale&& stale) {
        note_last_use(a);
        std::erase_if(last_uses_, [&](const AccessRecord& r) { return r.op.stream != a.op.stream && stale(r); });
        split_at(a.begin);
        split_at(a.end);
        if (a.write) {
            segments_.erase(segments_.lower_bound(a.begin), segments_.lower_bound(a.end));
            segments_.emplace(a.begin, Segment{a.end, a, {}});
        } else {
            record_read(a, stale);
        }
        coalesce(a.begin, a.end);
    }

    // Each stream's latest access (a free must be ordered after all of them).
    [[nodiscard]] const std::vector<AccessRecord>& last_uses() const noexcept { return last_uses_; }
    [[nodiscard]] std::size_t segment_count() const noexcept { return segments_.size(); }

private:
    struct Segment {
        std::uint64_t end = 0;
        std::optional<AccessRecord> write;
        std::vector<AccessRecord> reads;
    };
    using Segments = std::map<std::uint64_t, Segment>;  // by begin; disjoint

    [[nodiscard]] Segments::const_iterator first_overlap(std::uint64_t begin) const;
    void split_at(std::uint64_t pos);
    void note_last_use(const AccessRecord& a);
    void coalesce(std::uint64_t begin, std::uint64_t end);

    template <class Stale>
    void record_read(const AccessRecord& a, Stale&& stale) {
        std::uint64_t pos = a.begin;
        auto it = segments_.lower_bound(a.begin);
        while (pos < a.end) {
            if (it == segments_.end() || it->first > pos) {  // a gap: nothing remembered there
                const std::uint64_t gap_end = it == segments_.end() ? a.end : std::min(it->first, a.end);
                segments_.emplace_hint(it, pos, Segment{gap_end, std::nullopt, {a}});
                pos = gap_end;
                continue;
            }
            Segment& s = it->second;
            if (s.write && stale(*s.write)) s.write.reset();
            std::erase_if(s.reads, [&](const AccessRecord& r) { return r.op.stream == a.op.stream || stale(r); });
            s.reads.push_back(a);
            pos = s.end;
            ++it;
        }
    }

    Segments segments_;
    std::vector<AccessRecord> last_uses_;
};

}  // namespace keel::cpu
