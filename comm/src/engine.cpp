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
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
}

void Communicator::Impl::start_worker() { worker_ = std::thread([this] { worker_loop(); }); }

std::string Communicator::Impl::where(const char* op) const {
    return std::string("[Communicator::") + op + "] comm '" + name + "' rank " + std::to_string(rank) + "/" +
           std::to_string(size);
}

Result<void> Communicator::Impl::error() const {
    std::lock_guard lock(mutex_);
    if (error_) return *error_;
    return {};
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
    Result<void> gated = stream.enqueue_host_func([state = op->state](Status) {
        std::unique_lock lock(state->mutex);
        state->inputs_ready = true;
        state->cv.notify_all();
        state->cv.wait(lock, [&] { return state->finished; });
    });
    if (!gated.ok()) {
        (void)stream.hold(op);
        return gated;
    }
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(op);
    }
    cv_.notify_all();
    Result<void> out = stage_out();
    Result<void> held = stream.hold(std::move(op));
    if (!out.ok()) return out;
    return held;
}

void Communicator::Impl::check_signatures(const comm::Op& op) {
    using Signature = std::array<std::uint64_t, 4>;
    std::vector<Signature> all(static_cast<std::size_t>(size));
    Signature mine = op.signature;
    gloo::AllgatherOptions o(context);
    o.setInput(mine.data(), mine.size());
    o.setOutput(all.data()->data(), all.size() * mine.size());
    o.setTimeout(timeout);
    gloo::allgather(o);
    for (int r = 0; r < size; ++r) {
        const Signature& theirs = all[static_cast<std::size_t>(r)];
        if (theirs == mine) continue;
        static constexpr const char* kKinds[] = {"?", "all_reduce", "broadcast", "all_gather", "reduce_scatter"};
        auto text = [](const Signature& s) {
            return std::string(kKinds[s[0] < 5 ? s[0] : 0]) + " of " + std::to_string(s[1]) + " bytes (dtype " +
                   std::to_string(s[2]) + ", root/op " + std::to_string(s[3]) + ")";
        };
        throw std::runtime_error("rank " + std::to_string(r) + " enqueued " + text(theirs) + " where this rank " +
                                 "enqueued " + text(mine) + ": counts or operations differ between ranks");
    }
}

void Communicator::Impl::worker_loop() {
    // A write to a peer that died must fail with EPIPE, not kill the
    // process: SIGPIPE is blocked on the threads that run Gloo.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    for (;;) {
        std::shared_ptr<comm::Op> op;
        {
            std::unique_lock lock(mutex_);
            cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
            if (queue_.empty()) return;  // stopping, and every enqueued op done
            op = std::move(queue_.front());
            queue_.pop_front();
        }
        // The stream reaches the gate in its own time (it may be busy with
        // compute); abort() stops the wait.
        bool ready = false;
        {
            std::unique_lock lock(op->state->mutex);
            while (!op->state->inputs_ready) {
                if (error().ok() == false) break;
                op->state->cv.wait_for(lock, std::chrono::milliseconds(20));
            }
            ready = op->state->inputs_ready;
        }
        Result<void> before = error();
        if (ready && before.ok()) {
            try {
                if (op->collective && check_sizes && size > 1) check_signatures(*op);
                op->run();
            } catch (const std::exception& e) {
                fail(Error(KEEL_STATUS_UNAVAILABLE, where(op->what.c_str()) + " (" + op->detail + "): " + e.what()));
            } catch (...) {
                fail(Error(KEEL_STATUS_INTERNAL, where(op->what.c_str()) + " (" + op->detail + "): unknown exception"));
            }
        }
        {
            std::lock_guard lock(op->state->mutex);
            op->state->finished = true;
        }
        op->state->cv.notify_all();
    }
}

}  // namespace keel
