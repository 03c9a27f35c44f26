#include "preamble.hpp"

#include "engine.hpp"
#include "sigpipe_guard.hpp"

#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace keel::comm {
namespace {

// Slots of the size messages of the transfer on `slot`: one from its
// sender, one from its receiver (a send and a receive between the same two
// ranks may share a slot number), above every data slot.
constexpr std::uint64_t kSizeFromSender = std::uint64_t{1} << 52;
constexpr std::uint64_t kSizeFromReceiver = std::uint64_t{2} << 52;

}  // namespace

std::shared_ptr<Preamble> Preamble::post(Communicator::Impl& engine, const Op& op) {
    std::shared_ptr<Preamble> p(new Preamble());
    for (const Transfer& t : op.transfers) {
        p->peers_.push_back({t.peer, t.slot + (t.send ? kSizeFromSender : kSizeFromReceiver),
                             t.slot + (t.send ? kSizeFromReceiver : kSizeFromSender)});
        p->mine_.push_back(t.size);
    }
    p->theirs_.assign(p->mine_.size(), 0);
    if (p->peers_.empty()) return p;
    constexpr std::size_t bytes = sizeof(std::uint64_t);
    const auto& context = engine.mesh->context();
    p->out_ = context->createUnboundBuffer(p->mine_.data(), p->mine_.size() * sizeof(std::uint64_t));
    p->in_ = context->createUnboundBuffer(p->theirs_.data(), p->theirs_.size() * sizeof(std::uint64_t));
    engine.track(p->out_.get(), true);
    engine.track(p->in_.get(), true);
    p->tracked_ = true;
    try {
        const SigpipeBlocked blocked;  // the caller's thread
        for (std::size_t i = 0; i < p->peers_.size(); ++i) {
            p->in_->recv(p->peers_[i].rank, p->peers_[i].recv_slot, i * bytes, bytes);
            p->out_->send(p->peers_[i].rank, p->peers_[i].send_slot, i * bytes, bytes);
        }
    } catch (const std::exception& e) {
        p->failed_to_post_ = std::string("telling the peers this batch's sizes: ") + e.what();
    }
    return p;
}

Preamble::~Preamble() = default;

void Preamble::untrack(Communicator::Impl& engine) noexcept {
    if (!tracked_) return;
    engine.track(out_.get(), false);
    engine.track(in_.get(), false);
    tracked_ = false;
}

void Preamble::check(Communicator::Impl& engine, const Op& op) {
    if (peers_.empty()) return;
    struct Untrack {
        Preamble& p;
        Communicator::Impl& engine;
        ~Untrack() { p.untrack(engine); }
    } untrack{*this, engine};
    if (!failed_to_post_.empty()) throw std::runtime_error(failed_to_post_);
    // Each completion names its peer: a failure names those not heard yet.
    std::vector<bool> heard(peers_.size(), false);
    const auto missing = [&] {
        std::vector<int> ranks;
        for (std::size_t i = 0; i < peers_.size(); ++i)
            if (!heard[i] && std::find(ranks.begin(), ranks.end(), peers_[i].rank) == ranks.end())
                ranks.push_back(peers_[i].rank);
        std::string text;
        for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
        return "waiting for the sizes of peer " + text + ": ";
    };
    for (std::size_t n = 0; n < peers_.size(); ++n) {
        int from = -1;
        bool received = false;
        try {
            received = in_->waitRecv(&from, engine.timeout);
        } catch (const std::exception& e) {
            throw std::runtime_error(missing() + e.what());
        }
        if (!received) throw std::runtime_error(missing() + "aborted");
        for (std::size_t i = 0; i < peers_.size(); ++i)
            if (!heard[i] && peers_[i].rank == from) {
                heard[i] = true;
                break;
            }
    }
    for (std::size_t n = 0; n < peers_.size(); ++n)
        if (!out_->waitSend(engine.timeout))
            throw std::runtime_error("telling the peers this batch's sizes: aborted");
    for (std::size_t i = 0; i < peers_.size(); ++i) {
        if (mine_[i] == theirs_[i]) continue;
        const Transfer& t = op.transfers[i];
        throw std::runtime_error(describe(t) + ": this rank's " + (t.send ? "send" : "recv") + " has " +
                                 std::to_string(mine_[i]) + " bytes, the peer's matching " +
                                 (t.send ? "recv" : "send") + " " + std::to_string(theirs_[i]) +
                                 " bytes: the sizes of a send and its receive must be equal (nothing was sent)");
    }
}

}  // namespace keel::comm
