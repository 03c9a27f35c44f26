// What the ranks of an operation tell each other before its data moves: a
// collective's signature (kind, bytes, dtype, reduction or root) to every
// peer, and each send's and receive's size to its peer. Gloo stops the
// process when two sides disagree on a size, so the gate compares them
// first.
//
// The messages are posted when the operation is enqueued and awaited by
// its gate. By the time the gate runs, the peers' have usually arrived, so
// the check costs no round trip of its own; an all-gather at the gate cost
// one for every collective enqueued alone (the common case in a training
// step), which doubled the latency of a small all_reduce.
//
// Threads: posted by the enqueuing thread, checked by the gate's; the
// communicator's queue (under its lock) hands it over. Its messages may be
// pending in Gloo until they completed, so an operation that failed keeps
// its preamble until the pairs close (GlooMesh::keep_until_closed).
#pragma once

#include "op.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gloo::transport {
class UnboundBuffer;
}

namespace keel::comm {

class Preamble {
public:
    // Posts `op`'s messages (its collective index or its transfers' slots
    // are set) and tracks their buffers for abort(). The enqueuing thread
    // never sees the network fail: what Gloo throws here (a peer that died)
    // is kept for check(), so it fails the gate and thus the stream.
    static std::shared_ptr<Preamble> post(Communicator::Impl& engine, const Op& op);

    // Waits for every message (the communicator's timeout; abort() wakes
    // the waits) and compares: throws, naming the peer, when a message
    // failed or a peer's side differs. No longer tracked afterwards.
    void check(Communicator::Impl& engine, const Op& op);
    // No longer tracked for abort(): the gate will not check it.
    void untrack(Communicator::Impl& engine) noexcept;

    ~Preamble();

private:
    struct Peer {
        int rank;
        std::uint64_t send_slot;
        std::uint64_t recv_slot;
    };
    Preamble() = default;

    // Entry i: what this rank tells peers_[i] (mine_) and what it tells
    // this rank (theirs_), kWords words each for a collective, one for a
    // transfer.
    std::vector<Peer> peers_;
    std::size_t words_ = 0;
    std::vector<std::uint64_t> mine_;
    std::vector<std::uint64_t> theirs_;
    std::unique_ptr<gloo::transport::UnboundBuffer> out_;
    std::unique_ptr<gloo::transport::UnboundBuffer> in_;
    bool tracked_ = false;
    std::string failed_to_post_;  // what Gloo threw while posting
};

}  // namespace keel::comm
