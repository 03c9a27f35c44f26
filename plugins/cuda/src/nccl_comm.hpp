// One rank's NCCL communicator behind a keel_comm (keel.h 1.4), and the
// watchdog that bounds its operations by the timeout.
//
// NCCL runs on the stream's cudaStream_t; keel records a CUDA event before
// and after each operation. A watchdog thread per communicator checks the
// oldest pending operation and ncclCommGetAsyncError: an operation that has
// not completed within the timeout (counted from when its stream reached it,
// the event before it, and it was the oldest: an operation queued behind
// long compute is not declared dead while the compute runs), or
// an asynchronous NCCL error, fails the communicator with a message naming
// the operation, the communicator and its peers, and aborts NCCL
// (ncclCommAbort), which ends its kernels so the stream does not hang.
//
// A failure (the watchdog's, an abort, a call NCCL refused after others
// were enqueued) also fails the stream of every operation not yet seen
// complete, at that operation's point, through the stream's host-failure
// record (host_failure.hpp): synchronising the stream, querying it, events
// recorded after the operation and later enqueues on it report the error,
// as they do on the generic path. It is recorded before ncclCommAbort ends
// the kernels, so whoever waits on the stream sees it once the wait ends.
// The watchdog of every other communicator with an operation queued on such
// a stream after the failing point sees it too (within its watch period) and
// fails and aborts that communicator: CUDA runs work queued behind the
// failure, so that operation would hand its peers the failed one's output.
//
// On NCCL 2.14 and later the communicator is non-blocking
// (ncclCommInitRankConfig, blocking = 0): creation returns at once and
// keel polls ncclCommGetAsyncError until NCCL is ready, the timeout passes
// (then ncclCommAbort) or it fails; an operation NCCL reports in progress
// (connecting to a peer on first contact) is polled the same way before its
// completion event is recorded. Older NCCL creates in the blocking way, with
// no bound but NCCL's own.
#pragma once

#include "handles.hpp"
#include "nccl_library.hpp"

#include <keel/plugin/comm_config.hpp>

#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace keel::cuda {

// Threads: every member may be called from any thread (keel.h: enqueues in
// the order they return; abort at any time).
class NcclCommunicator {
public:
    // Collective (blocks until every rank arrived): agrees through the store
    // whether NCCL serves the group (UNIMPLEMENTED on every rank when NCCL
    // is missing on any rank or two ranks share a GPU), then rank 0 makes
    // the unique id, the others read it, and all call ncclCommInitRank.
    [[nodiscard]] static Result<std::unique_ptr<NcclCommunicator>> create(Device& device,
                                                                          const plugin::CommConfig& config);
    NcclCommunicator(const NcclCommunicator&) = delete;
    NcclCommunicator& operator=(const NcclCommunicator&) = delete;
    // Stops the watchdog; destroys (or, after a failure, has aborted) NCCL.
    ~NcclCommunicator();

    [[nodiscard]] Device& device() const noexcept { return device_; }
    [[nodiscard]] const NcclLibrary& nccl() const noexcept { return nccl_; }
    [[nodiscard]] const plugin::CommConfig& config() const noexcept { return config_; }

    // Runs `issue(comm, cuda_stream)` (the NCCL calls of one operation) on
    // `stream`, then records the operation for the watchdog. `what` names
    // the operation and its peers in messages.
    template <class Issue>
    [[nodiscard]] Result<void> enqueue(Stream& stream, const std::string& what, Issue&& issue);

    // Waits until the enqueued operations completed or failed (each bounded
    // by the timeout); the communicator's error, if any.
    [[nodiscard]] Result<void> drain();
    void abort(const std::string& why) noexcept;

private:
    struct Pending {
        cudaEvent_t reached = nullptr;  // recorded before the operation: its stream got there
        cudaEvent_t done = nullptr;     // recorded after it
        std::string what;
        // When the watchdog first saw it the oldest with its stream there
        // (`reached` complete); unset until then: the timeout counts from it.
        std::optional<std::chrono::steady_clock::time_point> since;
        std::shared_ptr<HostFailure> stream_failure;  // of the stream it runs on
        std::uint64_t point = 0;                      // its point on that stream
    };

    NcclCommunicator(Device& device, const NcclLibrary& nccl, plugin::CommConfig config, NcclComm comm);
    [[nodiscard]] Result<void> prepare(Stream& stream, const std::string& what);
    // A CUDA event recorded on `stream` now (before the operation's work).
    [[nodiscard]] Result<cudaEvent_t> mark(Stream& stream, const std::string& what);
    // `reached`: mark()'s event before the operation; finish() owns it.
    [[nodiscard]] Result<void> finish(Stream& stream, const std::string& what, NcclResult issued, std::uint64_t point,
                                      cudaEvent_t reached);
    // Polls ncclCommGetAsyncError while NCCL reports the operation in
    // progress, up to the timeout; its final result.
    [[nodiscard]] NcclResult settle(NcclResult issued);
    [[nodiscard]] Result<void> error() const;
    void fail(Status code, const std::string& message) noexcept;
    // ncclCommAbort once; the caller holds enqueue_mutex_ or gave up on it.
    void abort_nccl() noexcept;
    void watch();

    Device& device_;
    const NcclLibrary& nccl_;
    const plugin::CommConfig config_;
    NcclComm comm_;
    // Serialises NCCL calls on the communicator; abort() takes it only for a
    // while (an enqueue may be blocked in NCCL's connection set-up, which
    // ncclCommAbort is what ends).
    std::timed_mutex enqueue_mutex_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<Pending> pending_;
    std::optional<Error> error_;
    bool aborted_ = false;  // ncclCommAbort was called: never destroy
    bool stopping_ = false;
    std::thread watchdog_;
};

template <class Issue>
Result<void> NcclCommunicator::enqueue(Stream& stream, const std::string& what, Issue&& issue) {
    std::lock_guard order(enqueue_mutex_);
    KEEL_TRY(prepare(stream, what));
    KEEL_TRY_ASSIGN(cudaEvent_t reached, mark(stream, what));
    // The operation takes its point on the stream with its CUDA work, in
    // the order of the stream's host functions and event records.
    auto numbering = stream.host_failure().enqueue_lock();
    NcclResult issued = nccl_.GroupStart();
    if (issued == kNcclSuccess) {
        const NcclResult body = issue(comm_, stream.cuda());
        issued = nccl_.GroupEnd();
        if (body != kNcclSuccess && body != kNcclInProgress) issued = body;
    }
    return finish(stream, what, issued, stream.host_failure().next_point(), reached);
}

}  // namespace keel::cuda
