// Why an operation's stream had failed before its gate, for the gate's
// error. The gate is a host function: it gets only the stream's status code
// and may not call keel. So an event (a probe, reused once its gate ran) is
// recorded right before each gate, and a gate that finds its stream failed
// reads through it, on a thread of its own and within a bound, the first
// failure among the host functions that can fail the stream which the
// runtime counted up to there (keel/plugin_table.hpp's
// settle_fallible_host_funcs, on a stream that waits for the probe), else
// the stream's own error at the probe. Asking the runtime at every enqueue
// whether such a host function is pending costs more than the record where
// the communicator's own gates are pending (a cv wait per look), so the
// probe is always recorded: one event record per operation. Where none could
// be recorded the gate names the status code.
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

    // Before the gate of operation `index` is enqueued on `stream`: records
    // its probe (best effort: none when no event can be made or recorded).
    void before_gate(const Stream& stream, std::uint64_t index);
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
