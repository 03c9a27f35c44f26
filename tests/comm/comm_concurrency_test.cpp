// The multi-process comm tests that exercise keel::comm's threads (the
// enqueueing thread, the stream's gate, the communicator's worker, Gloo's
// loop, abort() from another thread, the connection watcher and the TCP
// store's host), labelled for the TSan run: a data race in a rank makes it
// exit non-zero.
#include "comm_fixtures.hpp"
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

// Rank 0's TCP store host thread answering both ranks, the connection
// watcher and the gate, with torchrun's variables alone.
TEST(CommThreads, TwoRanksMeetThroughTheTcpStoreRankZeroHostsAndAllReduce) {
    expect_all_zero(run_ranks("one_all_reduce", 2, ranks_upto(2), std::chrono::seconds(60),
                              {{"KEEL_COMM_STORE", ""}, {"MASTER_ADDR", "127.0.0.1"},
                               {"MASTER_PORT", std::to_string(free_port())}}));
}

}  // namespace
