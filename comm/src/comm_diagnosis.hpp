// What a communicator adds to the hang doctor's diagnosis: which operation
// this rank waits in, and, from every rank's report exchanged through the
// communicator's store, which ranks have not arrived at it.
//
// Each rank publishes its progress under "<key prefix>/diagnose/<rank>"
// when it diagnoses, then reads the others' for a short while; a rank that
// has not diagnosed (it is not blocked in keel) has no report.
#pragma once

#include <keel/comm.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace keel::comm {

// One rank's progress on one communicator.
struct RankProgress {
    int rank = 0;
    std::uint64_t enqueued = 0;  // operations enqueued so far
    std::int64_t waiting = -1;   // the operation its gate runs now, or -1
    std::string op = "none";     // that operation's kind
};

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
