// The Gloo call of each collective, run by its gate on the host memory the
// operation names (staging, or the device's own memory).
#pragma once

#include "op.hpp"

#include <gloo/context.h>

#include <chrono>
#include <memory>

namespace keel::comm {

// Runs `op` (a collective); throws Gloo's exceptions.
void run_collective(const Op& op, const std::shared_ptr<gloo::Context>& context, std::chrono::milliseconds timeout);

}  // namespace keel::comm
