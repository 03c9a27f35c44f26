// Meeting the peers: the rank claim through the store, then Gloo's full
// mesh over tcp with the store as Gloo's rendezvous store.
#pragma once

#include "socket_set.hpp"

#include <keel/comm.hpp>

#include <gloo/rendezvous/context.h>

#include <memory>
#include <string>
#include <vector>

namespace keel::comm {

struct Connected {
    std::shared_ptr<gloo::rendezvous::Context> context;
    SocketSet sockets;  // its pairs' sockets (socket_set.hpp)
    // The rank's claim key (and on rank 0 the key saying the communicator
    // completed), left in the store while the communicator lives so that a
    // later process claiming the same rank is refused; the communicator
    // erases them when it goes.
    std::vector<std::string> held_keys;
};

// Claims `rank` under `name` and waits until all `size` ranks claimed
// theirs; then connects every pair. Blocks up to options.timeout per step.
// FAILED_PRECONDITION for a rank another live process holds, for keys a
// process that ended left, and for a rank claimed after the communicator
// completed (while its rank 0 still lives).
[[nodiscard]] Result<Connected> connect(const Store& store, const std::string& name, int rank, int size,
                                        const CommOptions& options);

}  // namespace keel::comm
