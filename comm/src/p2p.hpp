// Point-to-point transfers of a send_recv batch over Gloo's unbound buffers,
// run by the gate of their operation.
#pragma once

#include "engine.hpp"
#include "op.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace keel::comm {

// Posts every transfer with bytes, then waits for each (the communicator's
// timeout; abort() wakes the waits). Throws, naming the peer, when one
// fails.
void transfer(Communicator::Impl& engine, const std::vector<Transfer>& batch);

}  // namespace keel::comm
