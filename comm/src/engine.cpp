#include "engine.hpp"

#include <gloo/transport/unbound_buffer.h>

#include <gloo/allgather.h>

#include <algorithm>
#include <csignal>
#include <exception>
#include <pthread.h>
#include <stdexcept>

namespace keel {

namespace {
// Point-to-point slots live above every prefix Gloo's collectives use.
constexpr std::uint64_t kP2PSlotBase = 0x40ull << 56;
}  // namespace

Communicator::Impl::Impl(Device device_in, int rank_in, int size_in, std::string name_in,
                         std::chrono::milliseconds timeout_in, bool check_sizes_in)
    : device(std::move(device_in)),
      rank(rank_in),
      size(size_in),
      name(std::move(name_in)),
      timeout(timeout_in),
      check_sizes(check_sizes_in),
      staging(std::make_shared<comm::StagingCache>(device)) {}

Communicator::Impl::~Impl() {
    // The gates of enqueued operations name this engine: they must all have
    // run. Each does once its stream gets there, bounded by the timeout.
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return queue_.empty(); });
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

void Communicator::Impl::fail(const Error& error) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = error;
}

void Communicator::Impl::abort() noexcept {
    std::vector<gloo::transport::UnboundBuffer*> waking;
    {
        std::lock_guard lock(mutex_);
        if (aborted_) return;
        aborted_ = true;
        if (!error_) error_ = Error(KEEL_STATUS_FAILED_PRECONDITION, where("abort") + ": aborted");
        waking = in_flight_;
        // Under the lock: track() removes a buffer under it before its
        // destruction, so these stay alive while we wake them.
        for (auto* buffer : waking) {
            buffer->abortWaitSend();
            buffer->abortWaitRecv();
        }
    }
    // A collective already inside Gloo waits on pairs no abortWait reaches:
    // their connections ending wake it (the peers' operations fail too).
    if (mesh) mesh->shut_down_sockets();
    cv_.notify_all();
}

std::uint64_t Communicator::Impl::next_send_slot(int peer) { return kP2PSlotBase + send_slots_[peer]++; }
std::uint64_t Communicator::Impl::next_recv_slot(int peer) { return kP2PSlotBase + recv_slots_[peer]++; }

void Communicator::Impl::track(gloo::transport::UnboundBuffer* buffer, bool add) {
    std::lock_guard lock(mutex_);
    if (add) {
        in_flight_.push_back(buffer);
        if (aborted_) {  // abort() came before this buffer was known
            buffer->abortWaitSend();
            buffer->abortWaitRecv();
        }
    } else {
        in_flight_.erase(std::remove(in_flight_.begin(), in_flight_.end(), buffer), in_flight_.end());
    }
}

Result<void> Communicator::Impl::enqueue(const Stream& stream, std::shared_ptr<comm::Op> op,
                                         const std::function<Result<void>()>& stage_in,
                                         const std::function<Result<void>()>& stage_out) {
    std::lock_guard order(enqueue_mutex_);
    KEEL_TRY(error());
    // From the first enqueued copy on, the staging must outlive what the
    // stream does with it: every path below ends in a hold of the op.
    Result<void> in = stage_in();
    if (!in.ok()) {
        (void)stream.hold(op);
        return in;
    }
    if (op->collective) op->collective_index = collectives_++;
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(op);  // before its gate: the gate looks for it
    }
    Result<void> gated =
        stream.enqueue_host_func([this, op](Status) -> Result<void> { return run_gate(op); });
    if (!gated.ok()) {
        {
            std::lock_guard lock(mutex_);
            queue_.erase(std::find(queue_.begin(), queue_.end(), op));
            // The ranks' orders of collectives now differ: later ones would
            // pair with the wrong peers' operations.
            if (op->collective && !error_)
                error_ = Error(gated.error().code(), where(op->what.c_str()) + ": its gate could not be enqueued, " +
                                                         "the communicator cannot go on: " + gated.error().message());
        }
        cv_.notify_all();
        (void)stream.hold(op);
        return gated;
    }
    Result<void> out = stage_out();
    Result<void> held = stream.hold(std::move(op));
    if (!out.ok()) return out;
    return held;
}

Result<void> Communicator::Impl::run_gate(const std::shared_ptr<comm::Op>& op) {
    {
        std::unique_lock lock(mutex_);
        // The operations enqueued before this one run first, on their own
        // streams' gates; abort() ends the wait.
        cv_.wait(lock, [&] { return queue_.front() == op || aborted_; });
    }
    std::optional<Error> failed;
    if (Result<void> before = error(); !before.ok()) {
        failed = Error(before.error().code(), where(op->what.c_str()) + " (" + op->detail +
                                                  "): not run, the communicator failed earlier: " +
                                                  before.error().message());
    } else {
        try {
            run_op(*op);
        } catch (const std::exception& e) {
            // After abort() Gloo reports whatever the shut-down connections
            // made of the wait (a closed pair, a peer that left): name the cause.
            bool aborted = false;
            {
                std::lock_guard lock(mutex_);
                aborted = aborted_;
            }
            failed = Error(aborted ? KEEL_STATUS_FAILED_PRECONDITION : KEEL_STATUS_UNAVAILABLE,
                           where(op->what.c_str()) + " (" + op->detail + "): " + (aborted ? "aborted: " : "") +
                               e.what() + (op->collective ? peers_text() : ""));
        } catch (...) {
            failed = Error(KEEL_STATUS_INTERNAL, where(op->what.c_str()) + " (" + op->detail + "): unknown exception");
        }
        if (failed) {
            fail(*failed);
            // Gloo may still fill its staging until the pairs close.
            keep_until_closed(op);
        }
    }
    {
        std::lock_guard lock(mutex_);
        auto it = std::find(queue_.begin(), queue_.end(), op);
        if (it != queue_.end()) queue_.erase(it);
    }
    cv_.notify_all();
    if (failed) return *failed;
    return {};
}

void Communicator::Impl::run_op(comm::Op& op) {
    // A write to a peer that died must fail with EPIPE, not kill the
    // process: SIGPIPE is blocked while Gloo runs on this (the plugin's)
    // thread, and one raised meanwhile is taken before it is unblocked.
    sigset_t pipe, previous;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &previous);
    struct Restore {
        sigset_t& pipe;
        sigset_t& previous;
        ~Restore() {
            if (sigismember(&previous, SIGPIPE)) return;  // was blocked: leave it so
            sigset_t pending;
            const timespec zero{0, 0};
            if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) (void)sigtimedwait(&pipe, nullptr, &zero);
            pthread_sigmask(SIG_SETMASK, &previous, nullptr);
        }
    } restore{pipe, previous};
    bool check = false;
    if (op.collective && check_sizes && size > 1) {
        std::lock_guard lock(mutex_);
        check = op.collective_index >= verified_;
    }
    if (check) check_signatures(op);
    op.run();
}

void Communicator::Impl::check_signatures(const comm::Op& op) {
    using Signature = std::array<std::uint64_t, 4>;  // kind 0: no operation known there
    std::vector<Signature> mine(kSignatureWindow, Signature{});
    {
        std::lock_guard lock(mutex_);
        std::size_t n = 0;
        for (const auto& queued : queue_)  // `op` first: it is the head
            if (queued->collective && n < kSignatureWindow) mine[n++] = queued->signature;
    }
    std::vector<Signature> all(static_cast<std::size_t>(size) * kSignatureWindow);
    gloo::AllgatherOptions o(mesh->context());
    o.setInput(mine.data()->data(), mine.size() * 4);
    o.setOutput(all.data()->data(), all.size() * 4);
    o.setTimeout(timeout);
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
        static constexpr const char* kKinds[] = {"?", "all_reduce", "broadcast", "all_gather", "reduce_scatter"};
        auto text = [](const Signature& s) {
            return std::string(kKinds[s[0] < 5 ? s[0] : 0]) + " of " + std::to_string(s[1]) + " bytes (dtype " +
                   std::to_string(s[2]) + ", root/op " + std::to_string(s[3]) + ")";
        };
        throw std::runtime_error("rank " + std::to_string(r) + " enqueued " + text(theirs) + " where this rank " +
                                 "enqueued " + text(mine[0]) + ": counts or operations differ between ranks");
    }
}

}  // namespace keel
