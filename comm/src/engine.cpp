#include "engine.hpp"

#include "collectives.hpp"
#include "comm_diagnosis.hpp"
#include "p2p.hpp"
#include "preamble.hpp"
#include "sigpipe_guard.hpp"

#include <keel/plugin_table.hpp>

#include <gloo/allgather.h>
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cstring>
#include <cassert>
#include <exception>
#include <stdexcept>
#include <string_view>

namespace keel {

namespace {
// Point-to-point slots live above every prefix Gloo's collectives use.
constexpr std::uint64_t kP2PSlotBase = 0x40ull << 56;
// What a closed connection means: peers fail the communicator everywhere
// by closing theirs (abort(), a failed stream, a failed operation).
constexpr const char* kPeerEnded = "a peer that closes its connections failed, aborted or exited: its own error says why";

bool says_timed_out(std::string_view gloo_error) {
    for (std::string_view timed_out : {"Timed out", "timed out", "Timeout", "timeout"})
        if (gloo_error.find(timed_out) != std::string_view::npos) return true;
    return false;
}

// " (its timeout of 800 ms passed: ...)": a Gloo timeout in words.
std::string timed_out_text(const comm::Op& op, std::string_view gloo_error) {
    if (!says_timed_out(gloo_error)) return {};
    return " (its timeout of " + std::to_string(op.timeout.count()) +
           " ms passed: a peer did not reach this operation in that time, or is stuck before it)";
}

bool says_closed(std::string_view gloo_error) {
    for (std::string_view closed : {"closed", "reset", "Broken pipe", "EOF"})
        if (gloo_error.find(closed) != std::string_view::npos) return true;
    return false;
}

}  // namespace

Communicator::Impl::Impl(Device device_in, int rank_in, int size_in, std::string name_in,
                         std::chrono::milliseconds timeout_in, bool check_sizes_in, bool checked_in)
    : device(std::move(device_in)),
      rank(rank_in),
      size(size_in),
      causes(device),
      name(std::move(name_in)),
      check_sizes(check_sizes_in),
      host_addressable(device.has(DeviceCapability::host_addressable)),
      checked(checked_in),
      staging(std::make_shared<comm::StagingCache>(device)),
      timeout_ms_(timeout_in.count()) {}

Communicator::Impl::~Impl() {
    // First: a diagnosis in progress still reads this communicator.
    diagnosis_.reset();
    // The gates of enqueued operations name this engine: they must all have
    // run. Each does once its stream gets there, bounded by the timeout.
    {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return queue_.empty(); });
    }
    if (watcher_.joinable()) {
        const std::uint64_t one = 1;
        (void)!::write(watcher_wake_, &one, sizeof(one));
        watcher_.join();
    }
    if (watcher_wake_ >= 0) ::close(watcher_wake_);
    if (claim_store)
        for (const std::string& key : held_keys) (void)claim_store->erase(key);
}

void Communicator::Impl::add_to_diagnoses() {
    if (!claim_store) return;
    diagnosis_ = std::make_unique<DiagnosisSection>([this] {
        comm::RankProgress mine;
        mine.rank = rank;
        mine.enqueued = ops_enqueued_.load(std::memory_order_relaxed);
        mine.waiting = running_.load(std::memory_order_acquire);
        mine.process = comm::this_process();
        if (mine.waiting >= 0) {
            const char* what = running_what_.load(std::memory_order_relaxed);
            mine.op = what != nullptr ? what : "operation";
        } else {
            // What the next operation waits for: another communicator's
            // operation running ahead of it on its stream, if one is.
            std::shared_ptr<comm::Op> next;
            {
                std::lock_guard lock(mutex_);
                if (!queue_.empty()) next = queue_.front();
            }
            if (next) {
                mine.next = static_cast<std::int64_t>(next->index);
                mine.next_op = next->what();
                if (auto ahead = comm::running_gate(next->stream); ahead && ahead->comm != name) {
                    mine.blocked_comm = ahead->comm;
                    mine.blocked_index = static_cast<std::int64_t>(ahead->index);
                    mine.blocked_op = ahead->op;
                }
            }
        }
        const auto patience = std::min<std::chrono::milliseconds>(timeout(), std::chrono::seconds(2));
        std::vector<comm::RankProgress> others = comm::exchange_progress(*claim_store, name, size, mine, patience);
        std::string text = comm::diagnosis_text(name, rank, size, mine, others, patience);
        others.push_back(mine);
        comm::remember_reports(name, others);
        if (const std::string cycle = comm::cross_communicator_cycle(); !cycle.empty()) text += "\n  " + cycle;
        return text;
    });
}

std::string Communicator::Impl::where(const char* op) const {
    return std::string("[Communicator::") + op + "] comm '" + name + "' rank " + std::to_string(rank) + "/" +
           std::to_string(size);
}

Result<void> Communicator::Impl::error() const {
    std::lock_guard lock(mutex_);
    if (error_) return *error_;
    return {};
}

std::string Communicator::Impl::ended_text(std::string_view gloo_error) const {
    const std::vector<int> ended = mesh->ended_peers();
    if (ended.empty()) return says_closed(gloo_error) ? std::string(" (") + kPeerEnded + ")" : std::string();
    std::string ranks;
    for (int r : ended) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    return " [the connection to rank" + std::string(ended.size() > 1 ? "s " : " ") + ranks + " ended: " + kPeerEnded +
           "]";
}

std::string Communicator::Impl::peers_text() const {
    // Gloo names a peer by its address, or not at all on a timeout: in a
    // collective every other rank is one.
    std::string text = " [peer ranks of this collective: ";
    int listed = 0;
    for (int r = 0; r < size && listed < 8; ++r) {
        if (r == rank) continue;
        text += (listed++ ? ", " : "") + std::to_string(r);
    }
    if (size - 1 > listed) text += ", ... (" + std::to_string(size - 1) + " in all)";
    return text + "]";
}

std::optional<comm::PeerFailure> Communicator::Impl::peer_failure() noexcept {
    {
        std::lock_guard lock(mutex_);
        if (seen_failure_) return seen_failure_;
    }
    if (!notice) return std::nullopt;
    const auto bound = std::min<std::chrono::milliseconds>(timeout(), comm::kNoticeBound);
    if (std::optional<comm::PeerFailure> read = notice->read(bound)) return read;
    // The connection watcher may be reading it (one read at a time, and the
    // same connection's end woke both): its verdict, within the same bound.
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, bound, [&] { return seen_failure_ || !watcher_reading_; });
    return seen_failure_;
}

void Communicator::Impl::fail_if_a_peer_failed() noexcept {
    {
        std::lock_guard lock(mutex_);
        if (error_ || !notice) return;
        watcher_reading_ = true;
    }
    // A connection that ends is a peer that failed the communicator (it
    // posted why before it closed them) or one that left (no notice: a
    // peer that exits or drops its communicator is not a failure until an
    // operation needs it). Read at once: the failing rank erases its notice
    // when its communicator goes, which a peer that reads only when its own
    // operation ends may come too late for.
    const std::optional<comm::PeerFailure> peer =
        notice->read(std::min<std::chrono::milliseconds>(timeout(), comm::kNoticeBound));
    {
        std::lock_guard lock(mutex_);
        watcher_reading_ = false;
        if (peer && !seen_failure_) seen_failure_ = peer;
    }
    cv_.notify_all();
    if (!peer) return;
    // Failed here too, as abort() would: error() and later enqueues say
    // why, and an operation in flight ends naming it.
    fail_everywhere(Error(peer->code(), where("error") + ": " + comm::FailureNotice::text(*peer)),
                    /*post=*/false);
}

void Communicator::Impl::abort() noexcept {
    fail_everywhere(Error(KEEL_STATUS_FAILED_PRECONDITION, where("abort") + ": aborted"));
}

void Communicator::Impl::fail_everywhere(const Error& error, bool post, bool mismatch) noexcept {
    {
        std::lock_guard lock(mutex_);
        if (!error_) error_ = error;
        if (aborted_) return;
        aborted_ = true;
        // Under the lock: track() removes a buffer under it before its
        // destruction, so these stay alive while we wake them.
        for (const InFlight& f : in_flight_) {
            f.buffer->abortWaitSend();
            f.buffer->abortWaitRecv();
        }
    }
    // Before the connections close: a peer whose operation ends on them
    // finds the cause in the store. Bounded: a store that is gone delays
    // the peers' failure by at most this, never stops it.
    if (post && notice)
        notice->post(error.message(), std::min<std::chrono::milliseconds>(timeout(), comm::kNoticeBound), mismatch);
    // A collective already inside Gloo waits on pairs no abortWait reaches:
    // their connections ending wake it (the peers' operations fail too).
    if (mesh) mesh->shut_down_sockets();
    cv_.notify_all();
}

std::uint64_t Communicator::Impl::next_send_slot(int peer) { return kP2PSlotBase + send_slots_[peer]++; }
std::uint64_t Communicator::Impl::next_recv_slot(int peer) { return kP2PSlotBase + recv_slots_[peer]++; }

void Communicator::Impl::track(gloo::transport::UnboundBuffer* buffer, int peer, bool add) {
    std::lock_guard lock(mutex_);
    if (add) {
        in_flight_.push_back({buffer, peer});
        // abort() came before this buffer was known, or the peer is gone.
        if (aborted_ || (peer >= 0 && static_cast<std::size_t>(peer) < ended_.size() && ended_[peer])) {
            buffer->abortWaitSend();
            buffer->abortWaitRecv();
        }
    } else {
        in_flight_.erase(std::remove_if(in_flight_.begin(), in_flight_.end(),
                                        [&](const InFlight& f) { return f.buffer == buffer; }),
                         in_flight_.end());
    }
}

bool Communicator::Impl::failed_everywhere() const {
    std::lock_guard lock(mutex_);
    return aborted_;
}

void Communicator::Impl::wake_waits_on(const std::vector<int>& peers) {
    std::lock_guard lock(mutex_);
    for (int peer : peers) ended_[static_cast<std::size_t>(peer)] = true;
    for (const InFlight& f : in_flight_) {
        if (f.peer < 0 || !ended_[static_cast<std::size_t>(f.peer)]) continue;
        f.buffer->abortWaitSend();
        f.buffer->abortWaitRecv();
    }
}

void Communicator::Impl::start_watching() {
    {
        std::lock_guard lock(mutex_);
        ended_.assign(static_cast<std::size_t>(size), false);
    }
    watcher_wake_ = ::eventfd(0, EFD_CLOEXEC);
    if (watcher_wake_ < 0 || !mesh) return;  // no watcher: such waits end at their timeout
    watcher_ = std::thread([this] {
        std::vector<bool> reported(static_cast<std::size_t>(size), false);
        for (;;) {
            const std::vector<int> ended = mesh->wait_for_ended(watcher_wake_, reported);
            if (ended.empty()) return;
            wake_waits_on(ended);
            fail_if_a_peer_failed();
        }
    });
}

Result<PinnedBuffer*> Communicator::Impl::stage(const Stream& stream, comm::Op& op, std::uint64_t bytes) {
    const keel_stream handle = plugin_handle(stream);
    auto recent = std::find_if(recent_staging_.begin(), recent_staging_.end(),
                               [&](const StreamStaging& r) { return r.stream == handle; });
    if (!checked && recent != recent_staging_.end()) {
        for (const std::shared_ptr<comm::StagingLease>& block : recent->blocks) {
            if (block->buffer().size() != bytes) continue;
            if (std::find(op.staging.begin(), op.staging.end(), block) != op.staging.end()) continue;
            op.staging.push_back(block);
            return &block->buffer();
        }
    }
    KEEL_TRY_ASSIGN(comm::StagingLease lease, staging->acquire(bytes));
    op.staging.push_back(std::make_shared<comm::StagingLease>(std::move(lease)));
    return &op.staging.back()->buffer();
}

Result<void> Communicator::Impl::enqueue(const std::unique_lock<std::mutex>& order, const Stream& stream,
                                         std::shared_ptr<comm::Op> op, std::span<const comm::StagedCopy> inputs,
                                         std::span<const comm::StagedCopy> outputs) {
    assert(order.owns_lock() && order.mutex() == &enqueue_mutex_);
    (void)order;
    KEEL_TRY(error());
    op->timeout = timeout();
    // From the first enqueued copy on, the staging must outlive what the
    // stream does with it: every path below that enqueued one ends in a
    // hold of the op (the gate owns it until it ran).
    Result<void> in = comm::enqueue_staged_copies(stream, inputs, comm::StagedDirection::to_staging);
    if (!in.ok()) {
        Error refused = not_enqueued(*op, in.error());
        fail_everywhere(refused);
        if (!inputs.empty()) (void)stream.hold(std::move(op));
        return refused;
    }
    op->index = ops_enqueued_.fetch_add(1, std::memory_order_relaxed);
    if (op->agreed_by_all()) op->collective_index = collectives_++;
    if (!op->collective()) {
        // Slots in the enqueue order, so the k-th message between two ranks
        // matches on both sides.
        for (comm::Transfer& t : op->transfers) t.slot = t.send ? next_send_slot(t.peer) : next_recv_slot(t.peer);
    }
    op->stream = plugin_handle(stream);
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(op);  // before its gate: the gate looks for it
    }
    causes.before_gate(stream, op->index);
    post_preamble(*op);
    Result<void> gated = stream.enqueue_host_func([this, op](Status status) -> Result<void> { return run_gate(op, status); });
    if (!gated.ok()) {
        {
            std::lock_guard lock(mutex_);
            queue_.erase(std::find(queue_.begin(), queue_.end(), op));
        }
        causes.done(op->index);
        fail_everywhere(not_enqueued(*op, gated.error()));
        cv_.notify_all();
        forget_preamble(*op);
        if (!inputs.empty()) (void)stream.hold(std::move(op));
        return gated;
    }
    if (!checked && !op->staging.empty()) remember_staging(plugin_handle(stream), op->staging);
    if (outputs.empty()) return {};
    Result<void> out = comm::enqueue_staged_copies(stream, outputs, comm::StagedDirection::from_staging);
    Result<void> held = stream.hold(op);
    if (out.ok() && held.ok()) return {};
    // The gate may already have run and failed (its peers had answered),
    // failing the stream, which then refuses the copies and the hold: the
    // operation was enqueued, and its failure is the stream's and the
    // communicator's error, reported there like any later one. (A refused
    // hold synchronizes and releases the staging: nothing runs after the
    // failed gate.)
    {
        std::lock_guard lock(mutex_);
        if (op->gate_failed) return {};
    }
    return !out.ok() ? out : held;
}

void Communicator::Impl::clear_outputs(const comm::Op& op) noexcept {
    // A plugin that cannot skip work already submitted behind the failed
    // gate (keel.h 1.4) runs the output copies anyway: they must deliver
    // zeros, not what the staging held (the previous operation's data).
    // The device's own memory (host-addressable) was never written.
    if (host_addressable) return;
    const auto clear = [](std::byte* p, std::uint64_t n) {
        if (p != nullptr && n > 0) std::memset(p, 0, n);
    };
    switch (op.kind) {
        case comm::OpKind::all_gather: return clear(op.out, op.bytes * static_cast<std::uint64_t>(size));
        case comm::OpKind::send_recv:
            for (const comm::Transfer& t : op.transfers)
                if (!t.send) clear(t.data, t.size);
            return;
        case comm::OpKind::barrier: return;
        default: return clear(op.out, op.bytes);
    }
}

Error Communicator::Impl::not_enqueued(const comm::Op& op, const Error& why) const {
    // The peers enqueued their side of it: they would wait for it until
    // their timeout, and later operations would pair with the wrong ones.
    return Error(why.code(), where(op.what()) + " (" + op.detail() + "): its stream refused it (" + why.message() +
                                 "); the communicator is failed on every rank");
}

void Communicator::Impl::remember_staging(keel_stream stream,
                                          const std::vector<std::shared_ptr<comm::StagingLease>>& blocks) {
    auto recent = std::find_if(recent_staging_.begin(), recent_staging_.end(),
                               [&](const StreamStaging& r) { return r.stream == stream; });
    if (recent == recent_staging_.end()) {
        if (recent_staging_.size() == kStagingStreams) recent_staging_.pop_front();
        recent_staging_.push_back({stream, {}});
        recent = std::prev(recent_staging_.end());
    }
    recent->blocks = blocks;
}

Result<void> Communicator::Impl::run_gate(const std::shared_ptr<comm::Op>& op, Status status) {
    std::optional<Error> failed;
    bool check = false;
    if (status != KEEL_STATUS_OK) {
        // The stream failed before this operation: its input copies were
        // skipped (or the data they read was never written), so its staging
        // holds whatever was there. Sending or reducing it would hand the
        // peers stale data with no error; the peers' matching operations
        // could only wait for the timeout. So the communicator fails here,
        // on every rank, as abort() does.
        // The original error where the runtime knows it (failure_cause.hpp).
        const std::optional<std::string> why =
            causes.cause(op->index, std::min<std::chrono::milliseconds>(op->timeout, comm::kNoticeBound));
        Error cause(status, where(op->what()) + " (" + op->detail() + "): not run: its stream had failed before it (" +
                                status_name(status) +
                                (why ? ": " + *why : std::string("; the stream's error says what failed")) +
                                "), so its input never arrived; the communicator is failed on every rank");
        fail_everywhere(cause);
        clear_outputs(*op);
        forget_preamble(*op);
        {
            std::lock_guard lock(mutex_);
            op->gate_failed = true;
            if (auto it = std::find(queue_.begin(), queue_.end(), op); it != queue_.end()) queue_.erase(it);
        }
        cv_.notify_all();
        return cause;
    }
    const std::string doing = where(op->what()) + " #" + std::to_string(op->index);
    {
        const BlockedOn turn(doing + ": waits for the communicator's earlier operations to run");
        std::unique_lock lock(mutex_);
        // The operations enqueued before this one run first, on their own
        // streams' gates; abort() ends the wait. Bounded: a stream that
        // never reaches an earlier operation must not hold this one forever.
        bool waited_out = false;
        if (!cv_.wait_for(lock, op->timeout, [&] { return queue_.front() == op || aborted_; })) {
            const comm::Op& head = *queue_.front();
            failed = Error(KEEL_STATUS_UNAVAILABLE,
                           where(op->what()) + " (" + op->detail() + "): waited " + std::to_string(op->timeout.count()) +
                               " ms for its turn: the communicator's earlier " + head.what() + " (" + head.detail() +
                               "), enqueued on another stream, did not run in that time (is that stream blocked?)");
            waited_out = true;
        } else if (error_) {
            failed = Error(error_->code(), where(op->what()) + " (" + op->detail() +
                                               "): not run, the communicator failed earlier: " + error_->message());
        } else {
            check = op->agreed_by_all() && check_sizes && size > 1 && op->collective_index >= verified_;
        }
        lock.unlock();
        if (waited_out) fail_everywhere(*failed);
    }
    if (failed) {
        clear_outputs(*op);
        forget_preamble(*op);
    }
    if (!failed) {
        bool mismatch = false;
        bool peer_named = false;  // a peer's posted failure ended it: not posted again
        try {
            const BlockedOn peers(doing + ": waits for its peer ranks (the diagnosis of communicator '" + name +
                                  "' says which have not arrived)");
            running_what_.store(op->what(), std::memory_order_relaxed);
            running_.store(static_cast<std::int64_t>(op->index), std::memory_order_release);
            comm::gate_started(op->stream, name, op->what(), op->index);
            struct Done {
                std::atomic<std::int64_t>& running;
                keel_stream stream;
                ~Done() {
                    comm::gate_ended(stream);
                    running.store(-1, std::memory_order_release);
                }
            } done{running_, op->stream};
            run_op(*op, check);
        } catch (const comm::Mismatch& e) {
            // The caller's mistake (counts, roots, sizes that differ), not
            // the network's.
            failed = Error(KEEL_STATUS_FAILED_PRECONDITION, where(op->what()) + " (" + op->detail() + "): " + e.what());
            mismatch = true;
        } catch (const std::exception& e) {
            // After abort() Gloo reports whatever the shut-down connections
            // made of the wait (a closed pair, a peer that left): name the cause.
            std::optional<Error> ended;  // abort(), or a failure on this rank
            {
                std::lock_guard lock(mutex_);
                if (aborted_) ended = error_;
            }
            std::optional<comm::PeerFailure> peer;
            if (!ended) peer = peer_failure();
            if (ended)
                failed = Error(ended->code(), where(op->what()) + " (" + op->detail() +
                                                  "): ended because the communicator failed: " + ended->message() +
                                                  " (" + e.what() + ")");
            else if ((peer_named = peer.has_value()))
                failed = Error(peer->code(),
                               where(op->what()) + " (" + op->detail() + "): ended because " +
                                   comm::FailureNotice::text(*peer));
            else
                failed = Error(KEEL_STATUS_UNAVAILABLE,
                               where(op->what()) + " (" + op->detail() + "): " + e.what() + timed_out_text(*op, e.what()) +
                                   (op->collective() ? peers_text() : "") + ended_text(e.what()));
        } catch (...) {
            failed = Error(KEEL_STATUS_INTERNAL, where(op->what()) + " (" + op->detail() + "): unknown exception");
        }
        if (failed) {
            // The peers learn at once, instead of at their timeout: those of
            // a mismatch too (a rank not in it would wait for its timeout, in
            // this operation or the next), as a mismatch (FAILED_PRECONDITION)
            // whether they saw it themselves or read it from the notice.
            fail_everywhere(*failed, !peer_named, mismatch);
            clear_outputs(*op);
            // Gloo may still fill its staging until the pairs close.
            keep_until_closed(op);
        }
    }
    causes.done(op->index);
    {
        std::lock_guard lock(mutex_);
        op->gate_failed = failed.has_value();
        if (!queue_.empty() && queue_.front() == op) {
            queue_.pop_front();
        } else if (auto it = std::find(queue_.begin(), queue_.end(), op); it != queue_.end()) {
            queue_.erase(it);  // after abort(): not necessarily the head
        }
    }
    cv_.notify_all();
    if (failed) return *failed;
    return {};
}

void Communicator::Impl::run_op(comm::Op& op, bool check) {
    const comm::SigpipeBlocked blocked;  // the gate's thread is the plugin's
    if (check) {
        try {
            check_signatures(op);
        } catch (...) {
            forget_preamble(op);  // never waited for now
            throw;
        }
    }
    if (op.preamble) op.preamble->check(*this, op);
    if (op.collective()) {
        comm::run_collective(op, mesh->context(), op.timeout);
        return;
    }
    comm::transfer(*this, op.transfers, op.timeout);
}

void Communicator::Impl::post_preamble(comm::Op& op) {
    if (check_sizes && !op.collective()) op.preamble = comm::Preamble::post(*this, op);
}

void Communicator::Impl::forget_preamble(comm::Op& op) {
    if (!op.preamble) return;
    op.preamble->untrack(*this);
    keep_until_closed(std::move(op.preamble));
}

void Communicator::Impl::check_signatures(const comm::Op& op) {
    using comm::Signature;  // kind 0: no operation known there
    std::vector<Signature> mine(kSignatureWindow, Signature{});
    {
        std::lock_guard lock(mutex_);
        std::size_t n = 0;
        for (const auto& queued : queue_)  // `op` first: it is the head
            if (queued->agreed_by_all() && n < kSignatureWindow) mine[n++] = queued->signature();
    }
    std::vector<Signature> all(static_cast<std::size_t>(size) * kSignatureWindow);
    gloo::AllgatherOptions o(mesh->context());
    o.setInput(mine.data()->data(), mine.size() * 4);
    o.setOutput(all.data()->data(), all.size() * 4);
    o.setTimeout(op.timeout);
    gloo::allgather(o);
    // The collectives every rank knows of and agrees on, from `op` on.
    std::size_t agreed = 0;
    for (; agreed < kSignatureWindow; ++agreed) {
        bool same = mine[agreed][0] != 0;
        for (int r = 0; same && r < size; ++r)
            same = all[static_cast<std::size_t>(r) * kSignatureWindow + agreed] == mine[agreed];
        if (!same) break;
    }
    if (agreed > 0) {
        std::lock_guard lock(mutex_);
        verified_ = op.collective_index + agreed;
        return;
    }
    for (int r = 0; r < size; ++r) {
        const Signature& theirs = all[static_cast<std::size_t>(r) * kSignatureWindow];
        if (theirs == mine[0]) continue;
        throw comm::Mismatch("rank " + std::to_string(r) + " enqueued " + comm::signature_text(theirs) +
                                 " where this rank enqueued " + comm::signature_text(mine[0]) + ": counts or operations differ between ranks");
    }
}

}  // namespace keel
