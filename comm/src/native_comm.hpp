// The native path of Communicator: the communication entries of keel.h 1.4
// of the device's plugin (the CUDA plugin over NCCL), called directly. The
// runtime checks the arguments (communicator.cpp) before it gets here; the
// plugin checks them again, as every entry does.
#pragma once

#include "failure_notice.hpp"
#include "written_keys.hpp"

#include <keel/comm.hpp>
#include <keel/keel.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>

namespace keel::comm {

// Which engine serves a group, and why, in words (Communicator::engine_kind(),
// engine_description()).
struct EngineChoice {
    CommEngine kind = CommEngine::native;
    std::string description;
    // The keys the plugin set in the store while it declined the group,
    // for the generic communicator to erase when it goes (null: none).
    std::shared_ptr<WrittenKeys> plugin_keys;
};

// Threads: Send and Sync (the plugin's entries may be called from any
// thread; error() and abort() lock). A group of two or more ranks has a
// watcher thread of its own, ended by the destructor.
class NativeComm {
public:
    // True when `device`'s plugin declares 1.4 or later and has the whole set.
    [[nodiscard]] static bool offered(const Device& device) noexcept;

    // The engine for this group: a native communicator, or null when the
    // generic path serves it (options.native false, KEEL_COMM_GENERIC set,
    // the plugin has no set, or its comm_create declined on every rank with
    // UNIMPLEMENTED). Any other failure of comm_create is the error.
    // `engine` says which and, for the generic path, why.
    [[nodiscard]] static Result<std::unique_ptr<NativeComm>> choose(const Device& device, const Store& store,
                                                                    int rank, int size, const std::string& name,
                                                                    const CommOptions& options, EngineChoice& engine);

    NativeComm(const NativeComm&) = delete;
    NativeComm& operator=(const NativeComm&) = delete;
    // Ends the watcher, comm_destroy (waits for the enqueued operations),
    // then erases the plugin's keys.
    ~NativeComm();

    [[nodiscard]] Result<void> all_reduce(const Stream& stream, DeviceView in, DeviceView out, keel_dtype dtype,
                                          ReduceOp op) const;
    [[nodiscard]] Result<void> broadcast(const Stream& stream, DeviceView in, DeviceView out, int root) const;
    [[nodiscard]] Result<void> all_gather(const Stream& stream, DeviceView in, DeviceView out) const;
    [[nodiscard]] Result<void> reduce_scatter(const Stream& stream, DeviceView in, DeviceView out, keel_dtype dtype,
                                              ReduceOp op) const;
    [[nodiscard]] Result<void> send_recv(const Stream& stream, std::span<const P2P> ops) const;

    void abort() const noexcept;
    // Abort's error, the first failure an enqueue reported, or the failure
    // of an operation's stream at or before the operation (the plugin fails
    // the stream of an operation that failed while running: its timeout,
    // a dead peer), seen once the stream passed that point.
    [[nodiscard]] Result<void> error() const;

private:
    // The sticky error, shared with the host functions that watch the
    // operations' streams (they may run after this communicator went).
    struct Failure {
        std::mutex mutex;
        std::optional<Error> error;
        // True when `e` is the first.
        bool note(Error e);
    };

    NativeComm(Device device, keel_comm comm, std::string where, std::chrono::milliseconds timeout,
               std::shared_ptr<WrittenKeys> plugin_keys, std::unique_ptr<FailureNotice> notice, int size);
    // Notes `e` as the communicator's error; the first is posted for the
    // peers (FailureNotice).
    void fail(Error e) const noexcept;
    // An engine such as NCCL ends a peer's operation only at that peer's own
    // timeout when this rank aborts: the watcher reads the failure a peer
    // posted (a short look every slice of the timeout) and aborts this
    // communicator naming it, so every rank fails within a fraction of its
    // timeout.
    void watch_peers();
    // Before an operation goes to the plugin: a host function that can fail
    // `stream` (or a stream it waits for) and is still pending may fail it
    // after the operation was submitted, and a device that cannot skip
    // submitted work would then run it over unspecified input, which the
    // peers receive with no error. So such host functions are waited for (at
    // most the timeout; only when one is pending), and when one failed, or
    // some still had not run at the timeout, the operation is not enqueued:
    // the communicator fails (abort) naming the original error, or what was
    // still pending and for how long.
    [[nodiscard]] Result<void> stream_settled(const Stream& stream, const char* what) const;
    // The entry's result; a failure of the communicator becomes its error.
    // An operation the plugin enqueued is followed on `stream` by a host
    // function that notes the stream's failure, if it failed by then.
    [[nodiscard]] Result<void> checked(const Stream& stream, keel_error* error) const;

    Device device_;
    const keel_plugin_api& api_;
    keel_comm comm_;
    std::string where_;
    std::chrono::milliseconds timeout_;
    std::shared_ptr<Failure> failure_ = std::make_shared<Failure>();
    // What the plugin set in the store (keel.h's store callbacks have no
    // erase): erased after comm_destroy, when no rank needs them any more
    // (every rank's comm_create read what it needed before any returned).
    std::shared_ptr<WrittenKeys> plugin_keys_;
    std::unique_ptr<FailureNotice> notice_;
    // The watcher (groups of two or more) and what ends it.
    std::mutex watch_mutex_;
    std::condition_variable watch_cv_;
    bool stopping_ = false;  // guarded by watch_mutex_
    std::thread watcher_;   // last: started once the rest exists
};

}  // namespace keel::comm
