#include "happens_before.hpp"

namespace keel::cpu {

void HappensBefore::add_stream(std::uint64_t stream) { streams_.try_emplace(stream); }

void HappensBefore::remove_stream(std::uint64_t stream) {
    auto it = streams_.find(stream);
    if (it == streams_.end()) return;
    host_learns(it->second.clock);
    streams_.erase(it);
    // Everything it did is ordered before whatever comes next: clocks can
    // forget it (ordered() answers yes for a retired stream).
    retired_.insert(stream);
    host_.erase(stream);
    for (auto& [id, s] : streams_) s.clock.erase(stream);
}

const VectorClock& HappensBefore::clock(std::uint64_t stream) {
    StreamClock& s = streams_[stream];
    if (s.host_version != host_version_) {
        s.clock.join(host_, not_live());
        s.host_version = host_version_;
    }
    return s.clock;
}

void HappensBefore::commit(std::uint64_t stream, std::uint64_t tick) { streams_[stream].clock.raise(stream, tick); }

std::shared_ptr<const VectorClock> HappensBefore::snapshot(std::uint64_t stream) {
    return std::make_shared<const VectorClock>(clock(stream));
}

void HappensBefore::wait(std::uint64_t stream, const VectorClock& event_clock) {
    streams_[stream].clock.join(event_clock, not_live());
}

void HappensBefore::host_learns(const VectorClock& known) {
    host_.join(known, not_live());
    ++host_version_;
}

const AccessRecord* HappensBefore::find_conflict(std::uint64_t id, std::uint64_t begin, std::uint64_t end,
                                                 bool write, const VectorClock& c) const {
    auto it = allocations_.find(id);
    if (it == allocations_.end()) return nullptr;
    return it->second.find_conflict(begin, end, write, [&](const AccessRecord& a) { return ordered(a, c); });
}

void HappensBefore::record(std::uint64_t id, const AccessRecord& a) {
    allocations_[id].record(a, [&](const AccessRecord& r) { return ordered(r, host_); });
}

const AccessRecord* HappensBefore::unordered_use(std::uint64_t id) const {
    auto it = allocations_.find(id);
    if (it == allocations_.end()) return nullptr;
    for (const AccessRecord& a : it->second.last_uses())
        if (!ordered(a, host_)) return &a;
    return nullptr;
}

std::size_t HappensBefore::remembered_segments() const {
    std::size_t n = 0;
    for (const auto& [id, m] : allocations_) n += m.segment_count();
    return n;
}

}  // namespace keel::cpu
