// What host threads wait for, for the hang doctor: keel's own blocking
// waits (Stream::synchronize, Event::synchronize, HostCopy::wait, ...) and
// what code declared with keel::BlockedOn (a host function waiting for
// another stream, a communication operation waiting for its peers).
//
// Each thread has one record, registered on its first wait; a wait costs an
// uncontended lock of that record and a clock read.
//
// Threads: Sync.
#pragma once

#include "diagnose/ledger.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace keel::doctor {

// A keel wait of the calling thread, from construction to destruction.
// `where` is a string literal ("Stream::synchronize"); `target` the site it
// waits for (0: unknown).
class HostWait {
public:
    HostWait(const char* where, Site target) noexcept;
    ~HostWait();
    HostWait(const HostWait&) = delete;
    HostWait& operator=(const HostWait&) = delete;
    HostWait(HostWait&&) = delete;
    HostWait& operator=(HostWait&&) = delete;

private:
    bool active_ = false;
};

// A declared block (keel::BlockedOn) of the calling thread; returns a token
// for end_note. `target`: the stream it waits for (a site of it), or 0.
std::uint64_t begin_note(std::string what, Site target) noexcept;
void end_note(std::uint64_t token) noexcept;

// The host function the calling thread is running (its site), or 0: set by
// the runtime around each host function it tracks.
void set_current_host_func(Site site) noexcept;
[[nodiscard]] Site current_host_func() noexcept;

struct WaitView {
    std::uint64_t thread = 0;    // the thread's id (gettid)
    bool note = false;           // declared with BlockedOn, not one of keel's waits
    std::string where;           // "Stream::synchronize", or the note's text
    Site target = 0;
    Site inside = 0;             // notes: the host function the thread was running
    std::int64_t since_ns = 0;
    std::uint64_t id = 0;        // unique per wait
};

// Every wait in progress, oldest first.
[[nodiscard]] std::vector<WaitView> host_waits();

}  // namespace keel::doctor
