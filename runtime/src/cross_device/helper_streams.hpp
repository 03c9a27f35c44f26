// Streams the runtime keeps on a device for work across devices: a bridged
// wait needs a stream of the event's device to wait on the event there, and
// a staged copy needs one of the other device to run its half of the copy.
//
// A helper is handed out to one user at a time, who enqueues its work and
// gives it back with a host function at the end of that work
// (enqueue_give_back): a healthy helper goes back to the idle list, a failed
// one (its sticky error would fail every later user) is retired and
// destroyed later. No helper is created until one is needed.
//
// Sync: every member may be called from any thread; give_back() from a host
// function (it makes no plugin call).
#pragma once

#include "../plugin_api.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

namespace keel::cross_device {

class HelperStreams {
public:
    HelperStreams() = default;
    HelperStreams(const HelperStreams&) = delete;
    HelperStreams& operator=(const HelperStreams&) = delete;
    HelperStreams(HelperStreams&&) = delete;
    HelperStreams& operator=(HelperStreams&&) = delete;
    ~HelperStreams() = default;  // close() has released every stream

    // An idle helper of `device`, or a new one.
    [[nodiscard]] Result<keel_stream> acquire(const detail::PluginApi& api, keel_device device);
    // Enqueues, at the end of what the user enqueued on `helper`, the host
    // function that gives it back. On failure the helper is destroyed here.
    [[nodiscard]] Result<void> enqueue_give_back(const detail::PluginApi& api, keel_stream helper);
    // Before plugin_shutdown: waits for the helpers still lent to come back
    // (their users are gone, but the host function that gives one back may
    // not have run yet: its stream would outlive the plugin), then destroys
    // every helper (each waits for its work). Users hold the plugin alive,
    // so no helper is acquired meanwhile.
    void close(const detail::PluginApi& api) noexcept;

private:
    void give_back(keel_stream helper, bool healthy) noexcept;
    // Destroys retired helpers (outside the lock).
    void destroy_retired(const detail::PluginApi& api) noexcept;

    std::mutex mu_;
    std::condition_variable returned_;
    std::size_t lent_ = 0;  // acquired and not given back yet
    std::vector<keel_stream> idle_;
    std::vector<keel_stream> retired_;
};

}  // namespace keel::cross_device
