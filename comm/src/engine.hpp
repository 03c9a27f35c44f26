// The generic engine behind Communicator: a Gloo context over tcp, and one
// worker thread that runs the communicator's operations on pinned staging
// in enqueue order.
//
// Why this design: an operation must run in stream order (after the work
// enqueued before it, before the work enqueued after it) without the
// enqueueing thread waiting, on any device, with only keel's ABI. So each
// operation is enqueued as
//   d2h copies of its inputs into pinned staging   (the stream's own copies)
//   a gate: a host function that marks the staged inputs ready and waits
//           until the worker ran the Gloo operation on them
//   h2d copies of the outputs from staging          (the stream's own copies)
//   a hold of the staging until the stream passed the copies.
// The gate keeps the stream from running ahead while the operation runs, as
// an NCCL kernel occupies its stream; the CPU plugin runs every stream on
// its own thread, so this blocks nothing else. Gloo itself runs on the
// worker, not on the plugin's thread: its calls block on the network for up
// to the timeout, and the worker serialises the operations in the order all
// ranks enqueued them, which must be one order per communicator across
// streams (a gate that ran the operation itself would follow the order the
// streams happen to reach their gates). The gate's wait is bounded by the
// operation's timeout: the worker finishes every operation, failing it on a
// timeout, a dead peer or abort().
#pragma once

#include "staging_cache.hpp"

#include <keel/comm.hpp>

#include <gloo/rendezvous/context.h>

#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace gloo::transport {
class UnboundBuffer;
}

namespace keel {

namespace comm {

class NativeComm;

// What the gate and the worker share about one operation.
struct OpState {
    std::mutex mutex;
    std::condition_variable cv;
    bool inputs_ready = false;  // set by the gate: the staged inputs are there
    bool finished = false;      // set by the worker
};

// One operation as the worker runs it. `run` works on the staging only and
// throws Gloo's exceptions, which the worker turns into the error.
struct Op {
    std::string what;    // the operation: "all_reduce"
    std::string detail;  // its arguments: "f32 sum, 4096 bytes", "send to 1"
    std::shared_ptr<OpState> state = std::make_shared<OpState>();
    std::function<void()> run;
    // What every rank must agree on before a collective runs (kind, bytes,
    // dtype, root): Gloo stops the process when counts differ.
    bool collective = true;
    std::array<std::uint64_t, 4> signature{};
    std::deque<StagingLease> staging;  // a deque: references to its leases stay valid
};

}  // namespace comm

struct Communicator::Impl {
    Impl(Device device, int rank, int size, std::string name, std::chrono::milliseconds timeout, bool check_sizes);
    ~Impl();
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;

    Device device;
    const int rank;
    const int size;
    const std::string name;
    const std::chrono::milliseconds timeout;
    const bool check_sizes;
    std::shared_ptr<gloo::rendezvous::Context> context;
    // Set when the plugin's native entries serve this communicator: then
    // there is no Gloo context and no worker.
    std::shared_ptr<const comm::NativeComm> native;
    std::string engine;  // Communicator::engine()
    std::shared_ptr<comm::StagingCache> staging;

    // Enqueues one operation: serialised so that the worker's order is the
    // order the calls return. `stage_in` enqueues the input copies,
    // `stage_out` the output copies; both on `stream`.
    Result<void> enqueue(const Stream& stream, std::shared_ptr<comm::Op> op,
                         const std::function<Result<void>()>& stage_in,
                         const std::function<Result<void>()>& stage_out);

    // The sticky error, or abort's.
    Result<void> error() const;
    void abort() noexcept;

    // The message prefix of an operation: "[Communicator::all_reduce] comm 'x' rank 0/2".
    std::string where(const char* op) const;

    // Point-to-point slots: per peer and direction, messages match in order.
    std::uint64_t next_send_slot(int peer);
    std::uint64_t next_recv_slot(int peer);

    // Unbound buffers in flight (point to point), so abort() can wake their waits.
    void track(gloo::transport::UnboundBuffer* buffer, bool add);

    void start_worker();

private:
    void worker_loop();
    // Throws when the ranks enqueued different collectives at this point.
    void check_signatures(const comm::Op& op);
    void fail(const Error& error);

    std::mutex enqueue_mutex_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::shared_ptr<comm::Op>> queue_;
    bool stopping_ = false;
    bool aborted_ = false;
    std::optional<Error> error_;
    std::map<int, std::uint64_t> send_slots_;
    std::map<int, std::uint64_t> recv_slots_;
    std::vector<gloo::transport::UnboundBuffer*> in_flight_;
    std::thread worker_;
};

}  // namespace keel
