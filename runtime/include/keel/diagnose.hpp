// The hang doctor: what every stream of this process waits for.
//
// keel::diagnose() prints (through keel's log, to standard error) and
// returns the wait-for graph of the process: for each stream with pending
// work, the first operation it cannot pass and what that waits for (an event
// or fence recorded at operation k of another stream, a host function still
// running, a communication operation waiting for ranks of a communicator),
// and for each host thread in a keel wait, what it waits for. It follows
// each chain to its root and names a cycle when there is one.
//
// The same diagnosis is printed automatically when one of keel's host waits
// (Stream::synchronize and close, Event::synchronize, HostCopy::wait, ...)
// has lasted KEEL_HANG_TIMEOUT seconds (default 60; 0 turns the watch and
// the bookkeeping of host waits off). With KEEL_HANG_REPORT=<file> the
// report is also written there as JSON, on that timeout and on SIGUSR1, for
// `keel-trace diagnose <file>...`.
//
// Operations are numbered per stream from 0 in the order their enqueue
// calls returned ("op 3 of cpu:0 stream 2").
//
// Threads: every function here may be called from any thread, also from a
// host function (a diagnosis then leaves out what only the plugin can say).
#pragma once

#include <keel/export.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace keel {

class Stream;

struct Diagnosis {
    std::string text;        // what was logged
    bool blocked = false;    // some stream or host thread waits for something that is not moving
    bool cycle = false;      // the waits form a cycle: nothing in it can ever move
};

// Diagnoses the process now: logs the report (warn level) and returns it.
KEEL_API Diagnosis diagnose();

// The name a diagnosis gives `stream` ("cpu:0 stream 3"); empty for an
// empty stream.
[[nodiscard]] KEEL_API std::string diagnosis_name(const Stream& stream);

// Declares, for the hang doctor, what the calling thread blocks on until
// this object goes: a host function that waits for another stream's work (or
// its own stream's), or any code waiting on something keel cannot see. With
// it, a diagnosis follows the chain through the wait and names the cycle it
// closes. Costs a lock of a per-thread record; calls no plugin, so it may be
// used inside a host function.
class KEEL_API BlockedOn {
public:
    // Waits for work of `stream` (enqueued or still to be enqueued).
    BlockedOn(const Stream& stream, std::string_view what) noexcept;
    // Waits for something outside keel.
    explicit BlockedOn(std::string_view what) noexcept;
    ~BlockedOn();
    BlockedOn(const BlockedOn&) = delete;
    BlockedOn& operator=(const BlockedOn&) = delete;
    BlockedOn(BlockedOn&&) = delete;
    BlockedOn& operator=(BlockedOn&&) = delete;

private:
    std::uint64_t token_ = 0;
};

// A contributor to every diagnosis (a communicator says which ranks have not
// arrived at which operation): `report` returns lines appended to the report
// (may block briefly, e.g. to exchange reports with peers). A line that
// starts with "cycle" (after spaces) names a cycle the section found: the
// diagnosis is then blocked in a cycle (Diagnosis::cycle). Registered while
// the object lives; its destructor waits for a report in progress.
class KEEL_API DiagnosisSection {
public:
    DiagnosisSection() = default;
    explicit DiagnosisSection(std::function<std::string()> report);
    ~DiagnosisSection();
    DiagnosisSection(const DiagnosisSection&) = delete;
    DiagnosisSection& operator=(const DiagnosisSection&) = delete;
    DiagnosisSection(DiagnosisSection&&) = delete;
    DiagnosisSection& operator=(DiagnosisSection&&) = delete;

private:
    std::uint64_t token_ = 0;
};

}  // namespace keel
