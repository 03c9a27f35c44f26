// Point-to-point transfers of a send_recv batch over Gloo's unbound buffers:
// posted, then waited for, by the gate of their operation or (the sizes of a
// batch, preamble.hpp) posted at enqueue and waited for by the gate.
#pragma once

#include "engine.hpp"
#include "op.hpp"

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace gloo::transport {
class UnboundBuffer;
}

namespace keel::comm {

// A batch's transfers with bytes, posted to Gloo and tracked for abort()
// until wait() or untrack(). Gloo may still fill or signal the buffers of a
// batch that failed or was never waited for until the pairs close: such a
// batch (and the memory its transfers name) is kept until then
// (Impl::keep_until_closed). Send, not Sync: posted on one thread, waited
// for on another, handed over under the communicator's lock.
class PostedTransfers {
public:
    // Posts every transfer with bytes, SIGPIPE blocked on the calling
    // thread. What Gloo throws while posting (a peer that died) is kept for
    // wait(), so the caller never sees the network fail here.
    PostedTransfers(Communicator::Impl& engine, std::vector<Transfer> batch);
    PostedTransfers(const PostedTransfers&) = delete;
    PostedTransfers& operator=(const PostedTransfers&) = delete;
    ~PostedTransfers();

    // Waits for each, up to `timeout` (the operation's; abort() wakes the
    // waits). Throws, naming the transfer and its peer, when one fails. No
    // longer tracked afterwards.
    void wait(Communicator::Impl& engine, std::chrono::milliseconds timeout);
    // No longer tracked for abort(): nobody will wait.
    void untrack(Communicator::Impl& engine) noexcept;

private:
    std::vector<Transfer> batch_;
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> buffers_;  // null: no bytes
    bool tracked_ = false;
    std::string failed_to_post_;
};

// Communicator::send_recv for a batch that makes the collective `group`
// (gather, scatter, all_to_all; kind 0: a plain batch), whose signature
// every rank compares before the data moves (CommOptions::check_sizes).
[[nodiscard]] Result<void> send_recv_as(Communicator::Impl& impl, const Stream& stream, std::span<const P2P> ops,
                                        const Signature& group);

// Posts every transfer with bytes, then waits for each: PostedTransfers at
// once, each wait up to `timeout`. A batch that failed is kept until the
// pairs close.
void transfer(Communicator::Impl& engine, const std::vector<Transfer>& batch, std::chrono::milliseconds timeout);

}  // namespace keel::comm
