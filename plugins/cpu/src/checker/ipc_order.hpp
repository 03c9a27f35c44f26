// The checker's view of memory shared between processes (keel.h 1.6):
//  * the exporter counts, in the allocation's shared header, the writes it
//    enqueues to exported memory, and remembers each one's (stream, tick)
//    until its host knows it complete;
//  * an interprocess event's record writes into the event's shared state,
//    per exported allocation, how many of those writes the record is
//    ordered after (the record's vector clock, or the host's knowledge);
//  * an importer learns those counts when it waits for the event (a stream
//    wait, a synchronize, a query that answered done), and an access to
//    imported memory while the exporter has enqueued writes the importer
//    has not learnt about is a race: the read comes before the exporter's
//    writes are ordered by the shared event.
// Knowledge is per importing process: a wait of any of its streams counts
// for all of them (it can hide a race between two importer streams, never
// invent one). Writes the exporter's host knew complete when it exported
// the allocation count as ordered for every import made after that.
//
// Not thread-safe: the Checker calls it under its lock.
#pragma once

#include "../ipc/shared_layouts.hpp"
#include "vector_clock.hpp"

#include <keel/keel.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace keel::cpu {

class IpcOrder {
public:
    void exported(std::uint64_t id, ipc::AllocationHeader* header) { exported_[id].header = header; }
    void imported(std::uint64_t id, keel_device_addr base, ipc::AllocationHeader* header);
    // The allocation was freed (exporter) or closed (importer, `base` is
    // remembered, so a later use is named a use after close).
    void forget(std::uint64_t id, keel_device_addr base, bool closed_import);
    [[nodiscard]] bool closed_import(keel_device_addr base) const { return closed_.count(base) != 0; }

    // Exporter: an op on `stream` with `tick` writes allocation `id`.
    void on_write(std::uint64_t id, std::uint64_t stream, std::uint64_t tick);
    // Exporter: what `host` (the host's clock) knows complete counts as
    // ordered for imports made from now on.
    void before_export(std::uint64_t id, const VectorClock& host);
    // Exporter: writes ordered before `clock` (or known to `host`) per
    // exported allocation, into the record's shared description.
    void cover(const VectorClock* clock, const VectorClock& host, ipc::EventState& state, std::uint64_t record);

    // Importer: the waited-for record's description becomes this process's knowledge.
    void learn(const ipc::EventState& state, std::uint64_t record);
    // Importer: the race an access to allocation `id` would be, if any.
    [[nodiscard]] std::optional<std::string> unordered(std::uint64_t id, bool write) const;

private:
    struct Write {
        std::uint64_t number = 0;
        std::uint64_t stream = 0;
        std::uint64_t tick = 0;
    };
    struct Exported {
        ipc::AllocationHeader* header = nullptr;
        std::deque<Write> pending;  // writes the host does not know complete, oldest first
    };
    struct Imported {
        ipc::AllocationHeader* header = nullptr;
        keel_device_addr base = 0;
    };
    // Writes of `e` ordered before `clock` (or known to `host`); drops what the host knows.
    [[nodiscard]] std::uint64_t ordered_writes(Exported& e, const VectorClock* clock, const VectorClock& host);

    std::unordered_map<std::uint64_t, Exported> exported_;
    std::unordered_map<std::uint64_t, Imported> imported_;
    std::unordered_map<std::uint64_t, std::uint64_t> known_;  // by allocation uid: writes ordered for this process
    std::unordered_set<keel_device_addr> closed_;
};

}  // namespace keel::cpu
