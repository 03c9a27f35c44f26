// The generic engine behind Communicator: a Gloo context over tcp, and the
// communicator's operations run on pinned staging in enqueue order.
//
// Why this design: an operation must run in stream order (after the work
// enqueued before it, before the work enqueued after it) without the
// enqueueing thread waiting, on any device, with only keel's ABI. So each
// operation is enqueued as
//   d2h copies of its inputs into pinned staging   (the stream's own copies)
//   a gate: a host function that waits until every operation enqueued on
//           the communicator before it ran (on whatever stream), then runs
//           the Gloo operation on the staging itself; a failed operation's
//           error is the gate's, which fails the stream (sticky) where the
//           plugin lets host functions fail it (keel.h 1.4)
//   h2d copies of the outputs from staging          (the stream's own copies)
//   a hold of the staging until the stream passed the copies.
// The gate keeps the stream from running ahead while the operation runs, as
// an NCCL kernel occupies its stream. Running Gloo on the gate (rather than
// on a worker thread the gate hands the operation to) saves two thread
// hand-offs per operation, which at small sizes cost more than Gloo's own
// round trip; the queue keeps one order per communicator across streams
// (the order all ranks enqueued), so a gate whose turn has not come waits
// for the gates before it. Every Gloo call is bounded by the timeout;
// abort() wakes every wait. Gloo blocks the plugin thread that runs the
// gate: the CPU plugin runs every stream on its own thread, so that blocks
// nothing else (see README for CUDA's shared callback thread).
#pragma once

#include "gloo_mesh.hpp"
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
#include <vector>

namespace gloo::transport {
class UnboundBuffer;
}

namespace keel {

namespace comm {

class NativeComm;

// One operation, as its gate runs it. `run` works on the staging only and
// throws Gloo's exceptions, which the gate turns into the error. It borrows
// the communicator's GlooMesh (never a copy of the Gloo context, which the
// mesh alone closes): ~Impl waits until every gate ran.
struct Op {
    std::string what;    // the operation: "all_reduce"
    std::string detail;  // its arguments: "f32 sum, 4096 bytes", "send to 1"
    std::function<void()> run;
    // What every rank must agree on before a collective runs (kind, bytes,
    // dtype, root): Gloo stops the process when counts differ.
    bool collective = true;
    std::array<std::uint64_t, 4> signature{};
    std::uint64_t collective_index = 0;  // among the communicator's collectives
    std::deque<StagingLease> staging;    // a deque: references to its leases stay valid
};

}  // namespace comm

struct Communicator::Impl {
    Impl(Device device, int rank, int size, std::string name, std::chrono::milliseconds timeout, bool check_sizes);
    // Waits until every enqueued operation ran (each bounded by the timeout
    // once its stream reaches it).
    ~Impl();
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;

    Device device;
    const int rank;
    const int size;
    const std::string name;
    const std::chrono::milliseconds timeout;
    const bool check_sizes;
    // The Gloo context, its sockets and what failed operations left with
    // it; absent when the plugin's native entries serve this communicator.
    std::unique_ptr<comm::GlooMesh> mesh;
    std::shared_ptr<const comm::NativeComm> native;
    std::string engine;  // Communicator::engine()
    std::shared_ptr<comm::StagingCache> staging;

    // Enqueues one operation: serialised so that the communicator's order
    // is the order the calls return. `stage_in` enqueues the input copies,
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
    // A batch that failed midway leaves operations pending in Gloo, whose
    // event loop may still signal or fill their buffers (and the memory they
    // point at) until the context closes its pairs: they live until then
    // (GlooMesh). A failed operation's staging is kept the same way.
    void keep_until_closed(std::shared_ptr<void> leftover) { mesh->keep_until_closed(std::move(leftover)); }

private:
    // The gate of `op`: waits for its turn, runs it, returns its error.
    Result<void> run_gate(const std::shared_ptr<comm::Op>& op);
    void run_op(comm::Op& op);
    // Throws when the ranks enqueued different collectives at this point.
    // Compares the signatures of the next kSignatureWindow collectives each
    // rank knows of in one all-gather; those found equal everywhere need no
    // check of their own.
    void check_signatures(const comm::Op& op);
    void fail(const Error& error);
    // " [peer ranks of this collective: 1, 2]": what a failure message names.
    std::string peers_text() const;

    static constexpr std::size_t kSignatureWindow = 16;

    std::mutex enqueue_mutex_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;  // the head of queue_ changed, or abort()
    std::deque<std::shared_ptr<comm::Op>> queue_;  // enqueued, not yet run; guarded by mutex_
    std::uint64_t collectives_ = 0;  // enqueued so far; guarded by enqueue_mutex_
    std::uint64_t verified_ = 0;     // collectives before this index were compared; guarded by mutex_
    bool aborted_ = false;
    std::optional<Error> error_;
    std::map<int, std::uint64_t> send_slots_;
    std::map<int, std::uint64_t> recv_slots_;
    std::vector<gloo::transport::UnboundBuffer*> in_flight_;
};

}  // namespace keel
