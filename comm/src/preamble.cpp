#include "preamble.hpp"

#include <exception>
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
    auto p = std::make_shared<Preamble>();
    const std::size_t n = op.transfers.size();
    p->mine_.resize(n);
    p->theirs_.assign(n, 0);
    std::vector<Transfer> sizes;
    sizes.reserve(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
        const Transfer& t = op.transfers[i];
        p->mine_[i] = t.size;
        const std::uint64_t out = t.slot + (t.send ? kSizeFromSender : kSizeFromReceiver);
        const std::uint64_t in = t.slot + (t.send ? kSizeFromReceiver : kSizeFromSender);
        sizes.push_back({true, t.peer, out, reinterpret_cast<std::byte*>(&p->mine_[i]), sizeof(std::uint64_t)});
        sizes.push_back({false, t.peer, in, reinterpret_cast<std::byte*>(&p->theirs_[i]), sizeof(std::uint64_t)});
    }
    p->posted_.emplace(engine, std::move(sizes));
    return p;
}

void Preamble::untrack(Communicator::Impl& engine) noexcept { posted_->untrack(engine); }

void Preamble::check(Communicator::Impl& engine, const Op& op) {
    try {
        posted_->wait(engine, op.timeout);
    } catch (const std::exception& e) {
        throw std::runtime_error(std::string("telling the peers this batch's sizes: ") + e.what());
    }
    for (std::size_t i = 0; i < mine_.size(); ++i) {
        if (mine_[i] == theirs_[i]) continue;
        const Transfer& t = op.transfers[i];
        throw Mismatch(describe(t) + ": this rank's " + (t.send ? "send" : "recv") + " has " +
                                 std::to_string(mine_[i]) + " bytes, the peer's matching " +
                                 (t.send ? "recv" : "send") + " " + std::to_string(theirs_[i]) +
                                 " bytes: the sizes of a send and its receive must be equal (nothing was sent)");
    }
}

}  // namespace keel::comm
