// The multi-process comm tests that exercise keel::comm's threads (the
// enqueueing thread, the stream's gate, the communicator's worker, Gloo's
// loop and abort() from another thread), labelled for the TSan run: a data
// race in a rank makes it exit non-zero.
#include "rank_runner.hpp"

#include <gtest/gtest.h>

namespace {

using namespace keel::testing;

TEST(CommThreads, BatchedSendsAndReceivesBothWaysArriveOnTwoRanks) {
    expect_all_zero(run_ranks("p2p", 2, ranks_upto(2), std::chrono::seconds(120)));
}

TEST(CommThreads, AbortFromAnotherThreadEndsAWaitingReceive) {
    expect_all_zero(run_ranks("abort", 2, ranks_upto(2), std::chrono::seconds(60)));
}

TEST(CommThreads, AbortShutsDownOnlyTheCommunicatorsOwnSockets) {
    expect_all_zero(run_ranks("abort_own_sockets", 2, ranks_upto(2), std::chrono::seconds(60)));
}

}  // namespace
