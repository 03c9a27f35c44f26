// A vector clock over streams: for each stream, how many of its operations
// (in enqueue order) are known to come before some point. Sparse and sorted:
// a clock names only the streams it has heard of, so a program that creates
// thousands of short-lived streams does not make every clock that long.
//
// A value type; not thread-safe (the checker's lock guards every clock).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace keel::cpu {

class VectorClock {
public:
    // Operations of `stream` known to come before: 0 when it never heard of it.
    [[nodiscard]] std::uint64_t get(std::uint64_t stream) const noexcept {
        auto it = find(stream);
        return it != entries_.end() && it->first == stream ? it->second : 0;
    }

    // Raises the entry of `stream` to `tick` (never lowers it).
    void raise(std::uint64_t stream, std::uint64_t tick) {
        auto it = find(stream);
        if (it != entries_.end() && it->first == stream) it->second = std::max(it->second, tick);
        else entries_.insert(it, {stream, tick});
    }

    // Pointwise maximum with `other`, leaving out the streams `skip` names.
    template <class Skip>
    void join(const VectorClock& other, Skip&& skip) {
        std::vector<std::pair<std::uint64_t, std::uint64_t>> merged;
        merged.reserve(entries_.size() + other.entries_.size());
        auto a = entries_.cbegin();
        auto b = other.entries_.cbegin();
        while (a != entries_.end() || b != other.entries_.end()) {
            std::pair<std::uint64_t, std::uint64_t> next;
            if (b == other.entries_.end() || (a != entries_.end() && a->first < b->first)) {
                next = *a++;
            } else if (a == entries_.end() || b->first < a->first) {
                next = *b++;
            } else {
                next = {a->first, std::max(a->second, b->second)};
                ++a, ++b;
            }
            if (!skip(next.first)) merged.push_back(next);
        }
        entries_.swap(merged);
    }

    void erase(std::uint64_t stream) {
        auto it = find(stream);
        if (it != entries_.end() && it->first == stream) entries_.erase(it);
    }

    [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

    // "{stream 1: 4, stream 2: 7}", for diagnostics.
    [[nodiscard]] std::string describe() const {
        std::string out = "{";
        for (const auto& [stream, tick] : entries_)
            out += (out.size() > 1 ? ", " : "") + std::string("stream ") + std::to_string(stream) + ": " +
                   std::to_string(tick);
        return out + "}";
    }

private:
    using Entries = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
    [[nodiscard]] Entries::const_iterator find(std::uint64_t stream) const noexcept {
        return std::lower_bound(entries_.begin(), entries_.end(), stream,
                                [](const auto& e, std::uint64_t s) { return e.first < s; });
    }
    [[nodiscard]] Entries::iterator find(std::uint64_t stream) noexcept {
        return std::lower_bound(entries_.begin(), entries_.end(), stream,
                                [](const auto& e, std::uint64_t s) { return e.first < s; });
    }

    Entries entries_;
};

}  // namespace keel::cpu
