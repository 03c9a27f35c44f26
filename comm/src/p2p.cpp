#include "p2p.hpp"

#include <gloo/transport/unbound_buffer.h>

#include <exception>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>

namespace keel::comm {
namespace {

// Tags of the size messages of the transfer on `slot`: one from its sender,
// one from its receiver (both above every data slot).
constexpr std::uint64_t kSizeFromSender = std::uint64_t{1} << 52;
constexpr std::uint64_t kSizeFromReceiver = std::uint64_t{2} << 52;

std::string describe(const Transfer& t) {
    return std::string(t.send ? "send to" : "recv from") + " peer " + std::to_string(t.peer);
}

}  // namespace

void transfer(Communicator::Impl& engine, const std::vector<Transfer>& batch) {
    using Buffers = std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>>;
    Buffers buffers(batch.size());
    struct Untrack {
        Communicator::Impl& engine;
        Buffers& buffers;
        ~Untrack() {
            for (auto& b : buffers)
                if (b) engine.track(b.get(), false);
            // Failed midway: the batch's other operations may still be
            // pending in Gloo, which would signal freed buffers.
            if (std::uncaught_exceptions() > 0) engine.keep_until_closed(std::make_shared<Buffers>(std::move(buffers)));
        }
    } untrack{engine, buffers};
    for (std::size_t i = 0; i < batch.size(); ++i) {
        const Transfer& t = batch[i];
        if (t.size == 0) continue;
        buffers[i] = engine.mesh->context()->createUnboundBuffer(t.data, t.size);
        engine.track(buffers[i].get(), true);
        if (t.send)
            buffers[i]->send(t.peer, t.slot);
        else
            buffers[i]->recv(t.peer, t.slot);
    }
    for (std::size_t i = 0; i < batch.size(); ++i) {
        if (!buffers[i]) continue;
        const Transfer& t = batch[i];
        const bool done = t.send ? buffers[i]->waitSend(engine.timeout) : buffers[i]->waitRecv(engine.timeout);
        if (!done) throw std::runtime_error(describe(t) + " aborted");
    }
}

void compare_sizes(Communicator::Impl& engine, const std::vector<Transfer>& batch) {
    // On the heap: a failed exchange may leave Gloo writing them (see below).
    auto counts = std::make_shared<std::vector<std::uint64_t>>(2 * batch.size());
    const std::span<std::uint64_t> mine(counts->data(), batch.size());
    const std::span<std::uint64_t> theirs(counts->data() + batch.size(), batch.size());
    std::vector<Transfer> sizes;
    sizes.reserve(2 * batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) {
        const Transfer& t = batch[i];
        mine[i] = t.size;
        const std::uint64_t out = t.slot + (t.send ? kSizeFromSender : kSizeFromReceiver);
        const std::uint64_t in = t.slot + (t.send ? kSizeFromReceiver : kSizeFromSender);
        sizes.push_back({true, t.peer, out, reinterpret_cast<std::byte*>(&mine[i]), sizeof(std::uint64_t)});
        sizes.push_back({false, t.peer, in, reinterpret_cast<std::byte*>(&theirs[i]), sizeof(std::uint64_t)});
    }
    try {
        transfer(engine, sizes);
    } catch (const std::exception& e) {
        engine.keep_until_closed(counts);
        throw std::runtime_error(std::string("telling the peers this batch's sizes: ") + e.what());
    }
    for (std::size_t i = 0; i < batch.size(); ++i) {
        if (mine[i] == theirs[i]) continue;
        const Transfer& t = batch[i];
        throw std::runtime_error(describe(t) + ": this rank's " + (t.send ? "send" : "recv") + " has " +
                                 std::to_string(mine[i]) + " bytes, the peer's matching " +
                                 (t.send ? "recv" : "send") + " " + std::to_string(theirs[i]) +
                                 " bytes: the sizes of a send and its receive must be equal (nothing was sent)");
    }
}

}  // namespace keel::comm
