#include "failure_cause.hpp"

#include "bounded_call.hpp"

#include <keel/plugin_table.hpp>

#include <memory>

namespace keel::comm {

void FailureCause::before_gate(const Stream& stream, std::uint64_t index) {
    std::lock_guard lock(mutex_);
    // Probes whose gates ran go back to the spares here, on this thread.
    for (std::uint64_t ran : done_) {
        auto it = probes_.find(ran);
        if (it == probes_.end()) continue;
        spare_.push_back(std::move(it->second));
        probes_.erase(it);
    }
    done_.clear();
    if (spare_.empty()) {
        Result<Event> made = Event::create(device_);
        if (!made.ok()) return;  // no probe: the gate names the status code
        spare_.push_back(std::move(made).value());
    }
    // Recording only enqueues: a gate that waits for this lock meanwhile is
    // not held up by the stream.
    if (!spare_.back().record(stream).ok()) return;
    probes_.emplace(index, std::move(spare_.back()));
    spare_.pop_back();
}

std::optional<std::string> FailureCause::cause(std::uint64_t index, std::chrono::milliseconds bound) {
    std::shared_ptr<Event> probe;
    {
        std::lock_guard lock(mutex_);
        auto it = probes_.find(index);
        if (it == probes_.end()) return std::nullopt;
        // Read, and dropped, on the reading thread: never on this one.
        probe = std::make_shared<Event>(std::move(it->second));
        probes_.erase(it);
    }
    auto error = std::make_shared<std::optional<std::string>>();
    // The stream passed the probe (it runs this gate): nothing here waits
    // for it. The first failure among the host functions the stream
    // depended on there (a stream that waits for the probe takes them on),
    // else the stream's own error at the probe.
    const bool finished = run_bounded(
        [probe = std::move(probe), device = device_, error] {
            if (Result<Stream> reader = Stream::create(device); reader.ok()) {
                if (reader->wait(*probe).ok()) {
                    Result<std::optional<PendingHostFuncs>> settled =
                        settle_fallible_host_funcs(*reader, std::chrono::milliseconds(0));
                    if (!settled.ok()) *error = settled.error().message();
                }
                (void)reader->close();  // failed by the wait, most likely: nobody needs to hear
            }
            if (*error) return;
            if (Result<void> r = probe->synchronize(); !r.ok()) *error = r.error().message();
        },
        bound);
    if (!finished) return std::nullopt;
    return *error;
}

void FailureCause::done(std::uint64_t index) {
    std::lock_guard lock(mutex_);
    if (probes_.count(index) > 0) done_.push_back(index);
}

}  // namespace keel::comm
