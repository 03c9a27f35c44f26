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
// On a device whose memory the host may dereference (HOST_ADDRESSABLE) the
// gate alone: Gloo works on the device memory in place. The staging blocks
// are shared along a stream (Impl::stage), and each operation is plain
// data (op.hpp): one allocation, one hold, no text unless it fails.
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

#include "failure_cause.hpp"
#include "failure_notice.hpp"
#include "gloo_mesh.hpp"
#include "op.hpp"
#include "staged_copy.hpp"
#include "staging_cache.hpp"
#include "written_keys.hpp"

#include <keel/comm.hpp>
#include <keel/diagnose.hpp>

#include <gloo/rendezvous/context.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace gloo::transport {
class UnboundBuffer;
}

namespace keel {

namespace comm {
class NativeComm;
}  // namespace comm

// "n bytes", for the messages that compare sizes.
inline std::string bytes_text(std::uint64_t n) { return std::to_string(n) + " bytes"; }

struct Communicator::Impl {
    Impl(Device device, int rank, int size, std::string name, std::chrono::milliseconds timeout, bool check_sizes,
         bool checked);
    // Waits until every enqueued operation ran (each bounded by the timeout
    // once its stream reaches it).
    ~Impl();
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;

    Device device;
    const int rank;
    const int size;
    // The store and the keys this rank holds while it lives (its claim; on
    // rank 0 the communicator's completion), erased by ~Impl (best effort:
    // a store that cannot erase keeps them).
    std::optional<Store> claim_store;
    std::vector<std::string> held_keys;
    // Why the communicator failed, for the peers and from them (posted by
    // fail_everywhere, read when an operation ends because of a peer).
    std::unique_ptr<comm::FailureNotice> notice;
    // What failed an operation's stream before its gate, for its error.
    comm::FailureCause causes;
    // The keys the plugin set before it declined the group; erased when
    // this goes.
    std::shared_ptr<comm::WrittenKeys> plugin_keys;
    const std::string name;
    const bool check_sizes;
    // The host may dereference the device's memory (keel.h's
    // KEEL_DEVICE_CAP_HOST_ADDRESSABLE): Gloo then works on it in place,
    // without staging copies (the gate runs in stream order, after the
    // work that wrote it).
    const bool host_addressable;
    // keel's checks are on (KEEL_CHECK), or a plugin checker that guards
    // the pages of pending copy destinations may be (the CPU plugin's,
    // KEEL_CPU_CHECK): no operation shares a staging block with another in
    // flight (such a
    // checker would see Gloo's access to a block shared with a later
    // operation as a host access to that one's pending destination).
    const bool checked;
    // The Gloo context, its sockets and what failed operations left with
    // it; absent when the plugin's native entries serve this communicator.
    std::unique_ptr<comm::GlooMesh> mesh;
    std::shared_ptr<const comm::NativeComm> native;
    CommEngine engine_kind = CommEngine::native;  // Communicator::engine_kind()
    std::string engine;  // Communicator::engine_description()
    std::shared_ptr<comm::StagingCache> staging;

    // The communicator's enqueue order, held from an operation's first
    // staging block to its enqueue: the order of the calls that returned is
    // the communicator's order of operations, and an operation's copies and
    // gate are consecutive among the communicator's work on its stream.
    [[nodiscard]] std::unique_lock<std::mutex> order() { return std::unique_lock(enqueue_mutex_); }
    // A staging block of `bytes` for `op` (under order()): one that the last
    // operation enqueued on `stream` used, where it has one of that size
    // that `op` does not use yet, else one from the cache. Sharing blocks
    // along a stream is safe because each operation's copy in, gate and
    // copy out run in stream order before the next one's, and it keeps
    // them warm in the caches: a loop of operations on one stream touches
    // one block per size instead of one per operation in flight. Not when
    // `checked`.
    Result<PinnedBuffer*> stage(const Stream& stream, comm::Op& op, std::uint64_t bytes);
    // Enqueues one operation (under order()): `inputs` are copied into the
    // operation's staging before its gate, `outputs` out of it after; the
    // staging is then held on `stream` until the stream passed them.
    Result<void> enqueue(const std::unique_lock<std::mutex>& order, const Stream& stream,
                         std::shared_ptr<comm::Op> op, std::span<const comm::StagedCopy> inputs,
                         std::span<const comm::StagedCopy> outputs);

    // The bound on each wait of an operation enqueued from now on
    // (Communicator::set_timeout); each operation keeps the one it was
    // enqueued with.
    [[nodiscard]] std::chrono::milliseconds timeout() const noexcept {
        return std::chrono::milliseconds(timeout_ms_.load(std::memory_order_relaxed));
    }
    void set_timeout(std::chrono::milliseconds timeout) noexcept {
        timeout_ms_.store(timeout.count(), std::memory_order_relaxed);
    }

    // The sticky error, or abort's.
    Result<void> error() const;
    void abort() noexcept;

    // The message prefix of an operation: "[Communicator::all_reduce] comm 'x' rank 0/2".
    std::string where(const char* op) const;

    // Point-to-point slots: per peer and direction, messages match in order.
    std::uint64_t next_send_slot(int peer);
    std::uint64_t next_recv_slot(int peer);

    // Unbound buffers in flight (point to point), so abort() can wake their waits.
    void track(gloo::transport::UnboundBuffer* buffer, int peer, bool add);
    // abort() was called or the communicator failed: a woken wait is over
    // (otherwise it was woken because its peer's connection ended, which a
    // peer that sent its last message and left also does).
    [[nodiscard]] bool failed_everywhere() const;
    // Starts the thread that watches the connections (once `mesh` is set):
    // a send or receive waiting on a peer whose connection ended is woken
    // at once (Gloo leaves a pending send waiting for its timeout).
    void start_watching();
    // A batch that failed midway leaves operations pending in Gloo, whose
    // event loop may still signal or fill their buffers (and the memory they
    // point at) until the context closes its pairs: they live until then
    // (GlooMesh). A failed operation, with its staging, is kept the same way.
    void keep_until_closed(std::shared_ptr<void> leftover) { mesh->keep_until_closed(std::move(leftover)); }
    // Adds this rank's part to every hang diagnosis (comm_diagnosis.hpp):
    // once the store is known; removed first thing in ~Impl.
    void add_to_diagnoses();

private:
    // The gate of `op`: waits for its turn, runs it, returns its error.
    // `status`: the stream's, not OK when it failed before the gate.
    Result<void> run_gate(const std::shared_ptr<comm::Op>& op, Status status);
    // `check`: compare the collective's signature with the peers' first;
    // a batch's preamble is checked first where there is one.
    void run_op(comm::Op& op, bool check);
    // Throws when the ranks enqueued different collectives at this point.
    // Compares the signatures of the next kSignatureWindow collectives each
    // rank knows of in one all-gather; those found equal everywhere need no
    // check of their own.
    void check_signatures(const comm::Op& op);
    // Posts a batch's sizes to its peers (preamble.hpp), when
    // CommOptions::check_sizes asks for it; the gate checks them.
    void post_preamble(comm::Op& op);
    // A preamble the gate will not check: its messages may still be
    // pending in Gloo, so it lives until the pairs close.
    void forget_preamble(comm::Op& op);
    // Fails the communicator with `error` (unless it failed already) and
    // ends it on every rank: wakes the waits in flight, posts the error to
    // the store for the peers (unless `post` is false: it came from there)
    // and shuts its connections down, so the peers' operations fail at once
    // too, naming it.
    void fail_everywhere(const Error& error, bool post = true, bool mismatch = false) noexcept;
    // The failure a peer posted (FailureNotice), if any: what an operation
    // that ended on closed connections names.
    std::optional<comm::PeerFailure> peer_failure() noexcept;
    // On a connection's end (the connection watcher): fails the
    // communicator with the failure a peer posted, if one did, so that a
    // rank in no operation learns it too.
    void fail_if_a_peer_failed() noexcept;
    // The error of an operation its stream refused after it was validated
    // (the stream had failed): fails the communicator everywhere.
    Error not_enqueued(const comm::Op& op, const Error& why) const;
    // Zeroes the staging a failed operation's output copies read.
    void clear_outputs(const comm::Op& op) noexcept;
    // " [peer ranks of this collective: 1, 2]": what a failure message names.
    std::string peers_text() const;
    // " [the connection to rank 2 ended: ...]": the peers whose connections
    // ended, named by rank (Gloo names them by address, if at all).
    std::string ended_text(std::string_view gloo_error) const;

    static constexpr std::size_t kSignatureWindow = 64;

    // The blocks of the last operation enqueued on each of the last few
    // streams (Impl::stage); guarded by enqueue_mutex_.
    struct StreamStaging {
        keel_stream stream = nullptr;
        std::vector<std::shared_ptr<comm::StagingLease>> blocks;
    };
    static constexpr std::size_t kStagingStreams = 8;
    std::deque<StreamStaging> recent_staging_;
    void remember_staging(keel_stream stream, const std::vector<std::shared_ptr<comm::StagingLease>>& blocks);

    std::atomic<std::chrono::milliseconds::rep> timeout_ms_;
    std::mutex enqueue_mutex_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;  // the head of queue_ changed, or abort()
    std::deque<std::shared_ptr<comm::Op>> queue_;  // enqueued, not yet run; guarded by mutex_
    std::uint64_t collectives_ = 0;  // enqueued so far; guarded by enqueue_mutex_
    std::uint64_t verified_ = 0;     // collectives before this index were compared; guarded by mutex_
    bool aborted_ = false;
    std::optional<Error> error_;
    std::optional<comm::PeerFailure> seen_failure_;  // a peer's notice, once read on a connection's end
    bool watcher_reading_ = false;                   // the connection watcher reads the notice
    std::map<int, std::uint64_t> send_slots_;
    std::map<int, std::uint64_t> recv_slots_;
    struct InFlight {
        gloo::transport::UnboundBuffer* buffer;
        int peer;
    };
    std::vector<InFlight> in_flight_;   // guarded by mutex_
    std::vector<bool> ended_;           // ranks whose connection ended; guarded by mutex_
    void wake_waits_on(const std::vector<int>& peers);
    std::thread watcher_;
    int watcher_wake_ = -1;  // an eventfd: written once to stop the watcher
    // For the hang doctor: operations enqueued, and the one a gate runs
    // (its index, -1 for none) and its kind.
    std::atomic<std::uint64_t> ops_enqueued_{0};
    std::atomic<std::int64_t> running_{-1};
    std::atomic<const char*> running_what_{nullptr};
    std::unique_ptr<DiagnosisSection> diagnosis_;
};

}  // namespace keel
