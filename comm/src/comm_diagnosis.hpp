// What a communicator adds to the hang doctor's diagnosis: which operation
// this rank waits in, and, from every rank's report exchanged through the
// communicator's store, which ranks have not arrived at it.
//
// Each rank publishes its progress under "<key prefix>/diagnose/<rank>"
// when it diagnoses, then reads the others' for a short while; a rank that
// has not diagnosed (it is not blocked in keel) has no report.
//
// Across communicators: a rank whose next operation of one communicator is
// queued on a stream behind another communicator's operation (one that waits
// for its peers) says so in its report, and each process keeps the last
// reports of all its communicators, so the diagnosis can follow the chain
// from rank to rank and communicator to communicator and name a cycle (two
// communicators whose operations two ranks enqueued in opposite orders).
#pragma once

#include <keel/comm.hpp>
#include <keel/keel.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace keel::comm {

// One rank's progress on one communicator.
struct RankProgress {
    int rank = 0;
    std::uint64_t enqueued = 0;  // operations enqueued so far
    std::int64_t waiting = -1;   // the operation its gate runs now, or -1
    std::string op = "none";     // that operation's kind
    std::string process;         // "host:pid": one node of the wait-for graph per process and communicator
    // When nothing runs: the next operation enqueued (or -1), and the other
    // communicator's operation running on that operation's stream ahead of
    // it, if one is (blocked_comm empty otherwise).
    std::int64_t next = -1;
    std::string next_op;
    std::string blocked_comm;
    std::int64_t blocked_index = -1;
    std::string blocked_op;
};

// This process's "host:pid".
[[nodiscard]] std::string this_process();

// The gates running now, by stream: what a stream's later operations are
// queued behind. Called by a gate around its wait for the peers.
void gate_started(keel_stream stream, const std::string& comm, const char* op, std::uint64_t index);
void gate_ended(keel_stream stream);
struct RunningGate {
    std::string comm;
    std::string op;
    std::uint64_t index = 0;
};
[[nodiscard]] std::optional<RunningGate> running_gate(keel_stream stream);

// Keeps the reports of one communicator's diagnosis (this rank's included)
// for the cross-communicator chains; the last one per communicator counts.
void remember_reports(const std::string& name, const std::vector<RankProgress>& reports);
// The cycle through communicators that this process is part of, from the
// reports remembered in the last minute, as one line; empty if none.
[[nodiscard]] std::string cross_communicator_cycle();

// "name=... rank=... size=... enqueued=... waiting=... op=...".
[[nodiscard]] std::string progress_line(const std::string& name, int size, const RankProgress& p);
[[nodiscard]] bool parse_progress(const std::string& line, RankProgress& out);

// The section's text for this rank: its own progress, every report found,
// and the ranks that have not arrived where the others wait.
[[nodiscard]] std::string diagnosis_text(const std::string& name, int rank, int size, const RankProgress& mine,
                                         const std::vector<RankProgress>& others, std::chrono::milliseconds waited);

// Publishes `mine` and collects the other ranks' reports (at most `patience`
// in all).
[[nodiscard]] std::vector<RankProgress> exchange_progress(const Store& store, const std::string& name, int size,
                                                          const RankProgress& mine,
                                                          std::chrono::milliseconds patience);

}  // namespace keel::comm
