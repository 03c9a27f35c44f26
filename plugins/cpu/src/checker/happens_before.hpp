// The happens-before model of the checker. Every stream has a vector clock
// advanced at ENQUEUE time, in the order the program issued its calls, so
// that what it reports does not depend on delays or scheduling:
//  * each operation enqueued on a stream ticks the stream's own entry;
//  * event_record captures the stream's clock; stream_wait_event joins the
//    event's clock into the waiting stream's;
//  * what the host learns complete (synchronize, a query that answered done,
//    a destroyed stream, a host function that started) joins the host
//    clock, which every later enqueue inherits.
// One access is ordered before another when the latter's clock has reached
// the former's tick. Per allocation, an AccessMap remembers the accesses
// not yet known to be ordered before everything to come.
//
// The host clock is one for the whole process: what one host thread learns
// counts for all. That can hide a race between host threads that did not
// really synchronise with each other, never invent one.
//
// Not thread-safe: the Checker calls it under its lock.
#pragma once

#include "access_map.hpp"
#include "vector_clock.hpp"

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>

namespace keel::cpu {

class HappensBefore {
public:
    void add_stream(std::uint64_t stream);
    // `stream` ran all its work and is gone: the host knows all of it.
    void remove_stream(std::uint64_t stream);

    // The clock of `stream` as the next operation enqueued on it sees it
    // (what the host knows joined in); its own entry is the last tick.
    [[nodiscard]] const VectorClock& clock(std::uint64_t stream);
    // Ticks `stream`'s own entry: the operation with `tick` was enqueued.
    void commit(std::uint64_t stream, std::uint64_t tick);
    [[nodiscard]] std::shared_ptr<const VectorClock> snapshot(std::uint64_t stream);
    // `stream` waits for `event_clock` (stream_wait_event).
    void wait(std::uint64_t stream, const VectorClock& event_clock);
    // The host learned that everything `known` names completed.
    void host_learns(const VectorClock& known);
    [[nodiscard]] const VectorClock& host() const noexcept { return host_; }

    // True when `a` is ordered before a point with clock `c`.
    [[nodiscard]] bool ordered(const AccessRecord& a, const VectorClock& c) const {
        return retired_.count(a.op.stream) != 0 || c.get(a.op.stream) >= a.tick;
    }

    // The first access of allocation `id` to [begin, end) that conflicts
    // with a read/write there by an operation with clock `c`.
    [[nodiscard]] const AccessRecord* find_conflict(std::uint64_t id, std::uint64_t begin, std::uint64_t end,
                                                    bool write, const VectorClock& c) const;
    void record(std::uint64_t id, const AccessRecord& a);
    // The first use of allocation `id` the host does not know complete.
    [[nodiscard]] const AccessRecord* unordered_use(std::uint64_t id) const;
    // The allocation was freed: its history goes.
    void forget(std::uint64_t id) { allocations_.erase(id); }

    [[nodiscard]] std::size_t remembered_segments() const;

private:
    struct StreamClock {
        VectorClock clock;
        std::uint64_t host_version = 0;  // host_version_ last joined into `clock`
    };
    [[nodiscard]] auto not_live() const {
        return [this](std::uint64_t s) { return retired_.count(s) != 0; };
    }

    std::unordered_map<std::uint64_t, StreamClock> streams_;
    std::unordered_set<std::uint64_t> retired_;
    VectorClock host_;
    std::uint64_t host_version_ = 0;
    std::unordered_map<std::uint64_t, AccessMap> allocations_;
};

}  // namespace keel::cpu
