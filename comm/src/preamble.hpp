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
#include "p2p.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace keel::comm {

class Preamble {
public:
    // Posts the sizes of `op`, a send_recv batch whose slots are set (two
    // 8-byte transfers for each of its transfers, PostedTransfers). The
    // enqueuing thread never sees the network fail: that fails the check.
    static std::shared_ptr<Preamble> post(Communicator::Impl& engine, const Op& op);

    // Waits for the sizes (the operation's timeout; abort() wakes the
    // waits) and compares: throws, naming the peer, when a message failed
    // or a peer's side differs. No longer tracked afterwards.
    void check(Communicator::Impl& engine, const Op& op);
    // No longer tracked for abort(): the gate will not check it.
    void untrack(Communicator::Impl& engine) noexcept;

private:
    // Entry i, for the batch's transfer i: the size this rank tells its
    // peer (mine_) and the one the peer tells this rank (theirs_). Sized
    // before posting: the transfers point into them.
    std::vector<std::uint64_t> mine_;
    std::vector<std::uint64_t> theirs_;
    std::optional<PostedTransfers> posted_;
};

}  // namespace keel::comm
