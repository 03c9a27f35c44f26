#include "access_map.hpp"

#include <algorithm>

namespace keel::cpu {
namespace {

bool same(const AccessRecord& a, const AccessRecord& b) {
    return a.op.stream == b.op.stream && a.tick == b.tick && a.begin == b.begin && a.end == b.end &&
           a.write == b.write && a.role == b.role;
}

bool same(const std::optional<AccessRecord>& a, const std::optional<AccessRecord>& b) {
    return a.has_value() == b.has_value() && (!a || same(*a, *b));
}

}  // namespace

AccessMap::Segments::const_iterator AccessMap::first_overlap(std::uint64_t begin) const {
    auto it = segments_.upper_bound(begin);
    if (it != segments_.begin()) {
        auto prev = std::prev(it);
        if (prev->second.end > begin) return prev;
    }
    return it;
}

void AccessMap::split_at(std::uint64_t pos) {
    auto it = segments_.upper_bound(pos);
    if (it == segments_.begin()) return;
    --it;
    if (it->first == pos || it->second.end <= pos) return;
    Segment right = it->second;
    it->second.end = pos;
    segments_.emplace_hint(std::next(it), pos, std::move(right));
}

void AccessMap::note_last_use(const AccessRecord& a) {
    for (AccessRecord& r : last_uses_)
        if (r.op.stream == a.op.stream) {
            r = a;  // a stream's ticks only grow: the latest access orders after its earlier ones
            return;
        }
    last_uses_.push_back(a);
}

void AccessMap::coalesce(std::uint64_t begin, std::uint64_t end) {
    auto it = segments_.lower_bound(begin);
    if (it != segments_.begin()) --it;
    while (it != segments_.end() && it->first <= end) {
        auto next = std::next(it);
        if (next == segments_.end()) break;
        Segment& a = it->second;
        const Segment& b = next->second;
        if (a.end == next->first && same(a.write, b.write) && a.reads.size() == b.reads.size() &&
            std::equal(a.reads.begin(), a.reads.end(), b.reads.begin(),
                       [](const AccessRecord& x, const AccessRecord& y) { return same(x, y); })) {
            a.end = b.end;
            segments_.erase(next);
            continue;  // `it` may merge with the one after, too
        }
        it = next;
    }
}

}  // namespace keel::cpu
