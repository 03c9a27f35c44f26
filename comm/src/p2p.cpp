#include "p2p.hpp"

#include "sigpipe_guard.hpp"

#include <gloo/transport/unbound_buffer.h>

#include <cstring>
#include <exception>
#include <stdexcept>

namespace keel::comm {
namespace {

// How long a transfer woken by its peer's connection ending is looked at
// again: Gloo completes one whose bytes it read at once.
constexpr std::chrono::milliseconds kEndedGrace{200};

}  // namespace

PostedTransfers::PostedTransfers(Communicator::Impl& engine, std::vector<Transfer> batch)
    : batch_(std::move(batch)), buffers_(batch_.size()) {
    tracked_ = true;
    try {
        const SigpipeBlocked blocked;  // the caller's thread may be the application's
        for (std::size_t i = 0; i < batch_.size(); ++i) {
            const Transfer& t = batch_[i];
            if (t.size == 0) continue;
            buffers_[i] = engine.mesh->context()->createUnboundBuffer(t.data, t.size);
            engine.track(buffers_[i].get(), t.peer, true);
            if (t.send)
                buffers_[i]->send(t.peer, t.slot);
            else
                buffers_[i]->recv(t.peer, t.slot);
        }
    } catch (const std::exception& e) {
        failed_to_post_ = e.what();
    }
}

PostedTransfers::~PostedTransfers() = default;

void PostedTransfers::untrack(Communicator::Impl& engine) noexcept {
    if (!tracked_) return;
    for (auto& b : buffers_)
        if (b) engine.track(b.get(), -1, false);
    tracked_ = false;
}

void PostedTransfers::wait(Communicator::Impl& engine, std::chrono::milliseconds timeout) {
    struct Untrack {
        PostedTransfers& posted;
        Communicator::Impl& engine;
        ~Untrack() { posted.untrack(engine); }
    } untrack{*this, engine};
    if (!failed_to_post_.empty()) throw std::runtime_error(failed_to_post_);
    for (std::size_t i = 0; i < batch_.size(); ++i) {
        if (!buffers_[i]) continue;
        const Transfer& t = batch_[i];
        bool done = false;
        try {
            done = t.send ? buffers_[i]->waitSend(timeout) : buffers_[i]->waitRecv(timeout);
            // Woken by abort() or a failure: the operation fails, whatever
            // its transfers did. Woken because the peer's connection ended
            // (the connection watcher): a peer that sent its last message and
            // exited ends it too, maybe after this transfer completed (Gloo's
            // wait reports a wake before a completion it already counted) or
            // while its last bytes are still read. So unless the communicator
            // failed, look again: a completed transfer is done; one that is
            // not fails as woken (Gloo's error for the ended pair, or the
            // grace), and the pairs close as the failure closes them.
            if (!done && !engine.failed_everywhere()) {
                try {
                    done = t.send ? buffers_[i]->waitSend(kEndedGrace) : buffers_[i]->waitRecv(kEndedGrace);
                } catch (const std::exception&) {
                    done = false;
                }
            }
        } catch (const std::exception& e) {
            // Gloo's timeout does not say which peer kept it waiting.
            throw std::runtime_error(describe(t) + ": " + e.what());
        }
        if (!done) throw std::runtime_error(describe(t) + ": woken before it completed (abort(), or its connection ended)");
    }
}

void transfer(Communicator::Impl& engine, const std::vector<Transfer>& batch, std::chrono::milliseconds timeout) {
    // Unchecked sizes: a send smaller than its receive fills only the
    // receive's first bytes, and Gloo does not say how many. The rest must
    // not be whatever the staging held before (another operation's data):
    // it is zero.
    if (!engine.check_sizes)
        for (const Transfer& t : batch)
            if (!t.send && t.size > 0) std::memset(t.data, 0, t.size);
    auto posted = std::make_shared<PostedTransfers>(engine, batch);
    try {
        posted->wait(engine, timeout);
    } catch (...) {
        // Failed midway: the batch's other transfers may still be pending in
        // Gloo, which would signal freed buffers.
        engine.keep_until_closed(std::move(posted));
        throw;
    }
}

}  // namespace keel::comm
