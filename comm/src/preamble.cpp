#include "preamble.hpp"

#include "engine.hpp"
#include "sigpipe_guard.hpp"

#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace keel::comm {
namespace {

// Slots of the preamble's messages, above every slot Gloo's collectives and
// the point-to-point data use. A collective's: one per collective index
// (each pair carries one each way). A transfer's: its data slot tagged by
// which side speaks, since a send and a receive between the same two ranks
// may share a slot number.
constexpr std::uint64_t kSignatureSlotBase = 0x41ull << 56;
constexpr std::uint64_t kSizeFromSender = std::uint64_t{1} << 52;
constexpr std::uint64_t kSizeFromReceiver = std::uint64_t{2} << 52;

constexpr std::size_t kSignatureWords = std::tuple_size_v<Signature>;

}  // namespace

std::shared_ptr<Preamble> Preamble::post(Communicator::Impl& engine, const Op& op) {
    std::shared_ptr<Preamble> p(new Preamble());
    if (op.collective()) {
        p->words_ = kSignatureWords;
        const Signature mine = op.signature();
        for (int r = 0; r < engine.size; ++r) {
            if (r == engine.rank) continue;
            const std::uint64_t slot = kSignatureSlotBase + op.collective_index;
            p->peers_.push_back({r, slot, slot});
            p->mine_.insert(p->mine_.end(), mine.begin(), mine.end());
        }
    } else {
        p->words_ = 1;
        for (const Transfer& t : op.transfers) {
            p->peers_.push_back({t.peer, t.slot + (t.send ? kSizeFromSender : kSizeFromReceiver),
                                 t.slot + (t.send ? kSizeFromReceiver : kSizeFromSender)});
            p->mine_.push_back(t.size);
        }
    }
    p->theirs_.assign(p->mine_.size(), 0);
    if (p->peers_.empty()) return p;
    const std::size_t bytes = p->words_ * sizeof(std::uint64_t);
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
        p->failed_to_post_ = std::string("telling the peers what this rank enqueued: ") + e.what();
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
        return "waiting for what peer " + text + " enqueued: ";
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
            throw std::runtime_error("telling the peers what this rank enqueued: aborted");
    for (std::size_t i = 0; i < peers_.size(); ++i) {
        const std::uint64_t* theirs = theirs_.data() + i * words_;
        const std::uint64_t* mine = mine_.data() + i * words_;
        if (std::equal(mine, mine + words_, theirs)) continue;
        if (op.collective()) {
            Signature s{};
            std::copy(theirs, theirs + words_, s.begin());
            throw std::runtime_error("rank " + std::to_string(peers_[i].rank) + " enqueued " + signature_text(s) +
                                     " where this rank enqueued " + signature_text(op.signature()) +
                                     ": counts or operations differ between ranks");
        }
        const Transfer& t = op.transfers[i];
        throw std::runtime_error(describe(t) + ": this rank's " + (t.send ? "send" : "recv") + " has " +
                                 std::to_string(mine[0]) + " bytes, the peer's matching " +
                                 (t.send ? "recv" : "send") + " " + std::to_string(theirs[0]) +
                                 " bytes: the sizes of a send and its receive must be equal (nothing was sent)");
    }
}

}  // namespace keel::comm
