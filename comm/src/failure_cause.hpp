// Why an operation's stream had failed before its gate, for the gate's
// error. The gate is a host function: it gets only the stream's status code
// and may not call keel. So where a host function that can fail the stream
// (one the runtime counts, keel/plugin_table.hpp) is pending when the
// operation is enqueued, an event is recorded right before the gate; a gate
// that finds its stream failed reads that event's error (the stream's error
// at that point: the original failure) on a thread of its own, within a
// bound. Where nothing such was pending the failure was a device
// operation's own, which the runtime does not see: the gate then names the
// status code. In the usual case (nothing pending but this communicator's
// own gates) this costs one look at the runtime's table per operation.
#pragma once

#include <keel/device.hpp>
#include <keel/event.hpp>
#include <keel/stream.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace keel::comm {

// Threads: before_gate() from the enqueuing thread (under the
// communicator's order), cause() and done() from gates (plugin threads);
// no event is ever destroyed on a gate's thread.
class FailureCause {
public:
    explicit FailureCause(Device device) : device_(std::move(device)) {}
    FailureCause(const FailureCause&) = delete;
    FailureCause& operator=(const FailureCause&) = delete;

    // Before the gate of operation `index` is enqueued on `stream`, of which
    // `own_gates` gates of this communicator have not run yet: records a
    // probe when more host functions that can fail the stream are pending.
    void before_gate(const Stream& stream, std::uint64_t index, std::uint64_t own_gates);
    // From the gate of `index`, whose stream had failed: the stream's error
    // there, read within `bound`; empty when no probe was recorded for it or
    // the read did not finish.
    [[nodiscard]] std::optional<std::string> cause(std::uint64_t index, std::chrono::milliseconds bound);
    // The gate of `index` ran: its probe is free again (reused by a later
    // before_gate, on the enqueuing thread).
    void done(std::uint64_t index);

private:
    Device device_;
    std::mutex mutex_;
    std::map<std::uint64_t, Event> probes_;  // recorded, by operation; guarded by mutex_
    std::vector<std::uint64_t> done_;         // whose gates ran; guarded by mutex_
    std::vector<Event> spare_;                // the enqueuing thread's (under the order)
};

}  // namespace keel::comm
