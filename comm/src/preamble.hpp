// What the two sides of each send and receive of a batch tell each other
// before the data moves: their sizes (8 bytes each way). Gloo stops the
// process when a receive is smaller than its send, so the gate compares
// them first.
//
// The messages are posted when the batch is enqueued and awaited by its
// gate, so their round trip overlaps whatever the stream does before the
// gate. (Collectives compare their signatures at the gate instead, in one
// all-gather for every collective queued by then: messages per operation
// would cost a small all_reduce more CPU than the round trip they save
// when many are in flight.)
//
// Threads: posted by the enqueuing thread, checked by the gate's; the
// communicator's queue (under its lock) hands it over. Its messages may be
// pending in Gloo until they completed, so a batch that failed keeps its
// preamble until the pairs close (GlooMesh::keep_until_closed).
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
    // Posts the messages of `op`, a send_recv batch whose slots are set, and tracks their buffers for abort(). The enqueuing thread
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

    // Entry i, for the batch's transfer i: the size this rank tells
    // peers_[i] (mine_) and the one it tells this rank (theirs_).
    std::vector<Peer> peers_;
    std::vector<std::uint64_t> mine_;
    std::vector<std::uint64_t> theirs_;
    std::unique_ptr<gloo::transport::UnboundBuffer> out_;
    std::unique_ptr<gloo::transport::UnboundBuffer> in_;
    bool tracked_ = false;
    std::string failed_to_post_;  // what Gloo threw while posting
};

}  // namespace keel::comm
