// The hang doctor's diagnosis: a snapshot of every open stream's ledger and
// every host thread's wait, turned into the wait-for graph, its chains,
// roots and cycles, as text (logged) and as JSON (KEEL_HANG_REPORT).
#pragma once

#include <keel/diagnose.hpp>

#include <string>

namespace keel::doctor {

// `why`: the first line's reason ("keel::diagnose() was called", "thread 12
// has waited 60.0 s in Stream::synchronize"). `json`, if not null, receives
// the report as JSON.
[[nodiscard]] Diagnosis build_diagnosis(const std::string& why, std::string* json);

}  // namespace keel::doctor
