// Meeting the peers: the rank claim through the store, then Gloo's full
// mesh over tcp with the store as Gloo's rendezvous store.
#pragma once

#include "socket_set.hpp"

#include <keel/comm.hpp>

#include <gloo/rendezvous/context.h>

#include <memory>
#include <string>

namespace keel::comm {

struct Connected {
    std::shared_ptr<gloo::rendezvous::Context> context;
    SocketSet sockets;  // its pairs' sockets (socket_set.hpp)
    // The rank's claim key, left in the store while the communicator lives
    // so that a later process claiming the same rank is refused; the
    // communicator erases it when it goes.
    std::string claim_key;
};

// Claims `rank` under `name` and waits until all `size` ranks claimed
// theirs; then connects every pair. Blocks up to options.timeout per step.
[[nodiscard]] Result<Connected> connect(const Store& store, const std::string& name, int rank, int size,
                                        const CommOptions& options);

}  // namespace keel::comm
