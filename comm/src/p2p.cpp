#include "p2p.hpp"

#include <gloo/transport/unbound_buffer.h>

#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

namespace keel::comm {

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

}  // namespace keel::comm
