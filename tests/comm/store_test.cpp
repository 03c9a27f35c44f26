// Stores that serve job after job, and ranks meeting without a shared
// store: each test starts rank processes (keel_comm_rank) against a store
// it keeps between runs (a directory, a redis-server of its own, the TCP
// store rank 0 hosts), and judges exit codes and what the store holds after.
#include "comm_fixtures.hpp"
#include "rank_runner.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <optional>

namespace {

using namespace keel::testing;
using Env = std::vector<std::pair<std::string, std::string>>;

struct TempDir {
    std::string path;
    TempDir() : path((fs::temp_directory_path() / "keel-store-test-XXXXXX").string()) {
        EXPECT_NE(::mkdtemp(path.data()), nullptr);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

std::size_t files_in(const std::string& dir) {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++n;
    return n;
}

TEST(CommStores, AJobRunsAgainOnTheSameFileStoreDirectoryAndLeavesNoKeys) {
    TempDir dir;
    const Env env = {{"KEEL_COMM_STORE", "file:" + dir.path}};
    expect_all_zero(run_ranks("one_all_reduce", 2, ranks_upto(2), std::chrono::seconds(30), env));
    EXPECT_EQ(files_in(dir.path), 0u);
    expect_all_zero(run_ranks("one_all_reduce", 2, ranks_upto(2), std::chrono::seconds(30), env));
    EXPECT_EQ(files_in(dir.path), 0u);
}

TEST(CommStores, AJobRunsAgainOnTheSameRedisServerAndLeavesNoKeys) {
    KEEL_START_REDIS(redis);
    const Env env = {{"KEEL_COMM_STORE", redis.store()}};
    expect_all_zero(run_ranks("one_all_reduce", 2, ranks_upto(2), std::chrono::seconds(30), env));
    EXPECT_EQ(redis.cli("dbsize"), "0");
    expect_all_zero(run_ranks("one_all_reduce", 2, ranks_upto(2), std::chrono::seconds(30), env));
    EXPECT_EQ(redis.cli("dbsize"), "0");
}

TEST(CommStores, TwoHundredCommunicatorsLeaveNoKeysInTheFileStore) {
    TempDir dir;
    expect_all_zero(run_ranks("many_communicators", 2, ranks_upto(2), std::chrono::seconds(170),
                              {{"KEEL_COMM_STORE", "file:" + dir.path}}));
    EXPECT_EQ(files_in(dir.path), 0u);
}

// A job killed while its ranks met leaves its keys: the next run under the
// same job id is told so at once on every rank; one under its own id runs.
TEST(CommStores, AKeyLeftByADeadJobIsReportedAsSuchAndAnotherJobIdRunsBesideIt) {
    TempDir dir;
    const Env env = {{"KEEL_COMM_STORE", "file:" + dir.path}, {"KEEL_COMM_JOB_ID", "first"}};
    const RankRun dead = run_ranks("dies_while_meeting", 2, {0}, std::chrono::seconds(3), env);
    ASSERT_EQ(dead.codes[0], -1) << "the rank was meant to wait until it was killed";
    ASSERT_GT(files_in(dir.path), 0u);
    expect_all_zero(run_ranks("stale_job", 2, ranks_upto(2), std::chrono::seconds(30), env));
    expect_all_zero(run_ranks("one_all_reduce", 2, ranks_upto(2), std::chrono::seconds(30),
                              {{"KEEL_COMM_STORE", "file:" + dir.path}, {"KEEL_COMM_JOB_ID", "second"}}));
    // Killed after its ranks met, the job leaves only rank 1's claim: rank 1
    // is refused at once, and rank 0, waiting for it, is told why at once too.
    const Env third = {{"KEEL_COMM_STORE", "file:" + dir.path}, {"KEEL_COMM_JOB_ID", "third"}};
    const RankRun killed = run_ranks("killed_after_meeting", 2, ranks_upto(2), std::chrono::seconds(30), third);
    ASSERT_EQ(killed.codes[0], 0);
    ASSERT_EQ(killed.codes[1], 128 + SIGKILL);
    expect_all_zero(run_ranks("stale_job", 2, ranks_upto(2), std::chrono::seconds(30), third));
}

TEST(CommStores, ARankClaimedTwiceOnRedisIsAFailedPrecondition) {
    KEEL_START_REDIS(redis);
    const RankRun run = run_ranks("duplicate_rank", 2, {0, 1, 0}, std::chrono::seconds(30),
                                  {{"KEEL_COMM_STORE", redis.store()}});
    int refused = 0;
    for (int code : run.codes) {
        EXPECT_NE(code, -1) << "a process hung";
        refused += code == 3;
    }
    EXPECT_GE(refused, 1) << "no process was refused its rank with FAILED_PRECONDITION";
}

// A process that claims a rank after the job's ranks met, once that rank's
// first process let its communicator go, is told the communicator completed
// (FAILED_PRECONDITION, at once), on the file, TCP and Redis stores alike
// (the scenario orders its three processes through the store).
TEST(CommStores, ALateClaimantOfACompletedCommunicatorIsAFailedPreconditionOnEveryStore) {
    expect_all_zero(run_ranks("late_claimant", 2, {0, 1, 1}, std::chrono::seconds(60)));
    const Env tcp = {{"KEEL_COMM_STORE", ""}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(free_port())}};
    expect_all_zero(run_ranks("late_claimant", 2, {0, 1, 1}, std::chrono::seconds(60), tcp));
    if (!redis_installed()) GTEST_SKIP() << "redis-server is not installed (Debian: redis-server): file and TCP ran";
    KEEL_START_REDIS(redis);
    expect_all_zero(run_ranks("late_claimant", 2, {0, 1, 1}, std::chrono::seconds(60), {{"KEEL_COMM_STORE", redis.store()}}));
    EXPECT_EQ(redis.cli("dbsize"), "0");
}

// torchrun's variables alone: rank 0 hosts the store at MASTER_PORT.
TEST(CommStores, RanksMeetThroughTheTcpStoreRankZeroHostsAtMasterPort) {
    const Env env = {{"KEEL_COMM_STORE", ""},  // empty is unset
                     {"MASTER_ADDR", "127.0.0.1"},
                     {"MASTER_PORT", std::to_string(free_port())}};
    expect_all_zero(run_ranks("one_all_reduce", 3, ranks_upto(3), std::chrono::seconds(30), env));
}

TEST(CommStores, AnUnreachableMasterIsAClearErrorWithinTheTimeout) {
    const Env env = {{"KEEL_COMM_STORE", ""}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(free_port())}};
    expect_all_zero(run_ranks("unreachable_store", 2, {1}, std::chrono::seconds(30), env));
}

// Two hosts as a user starts them: keel-launch in each of two network
// namespaces joined by a veth pair, two ranks each, torchrun's names, the
// TCP store at node 0's address and the interface given to keel-launch.
TEST(CommStores, KeelLaunchStartsOneJobOnTwoHostsThroughTheMaster) {
    TwoHosts hosts("l", "10.78.0");
    if (const std::string why = hosts.up(); !why.empty()) GTEST_SKIP() << why;
    const std::string master = hosts.address(0) + ":29500";
    auto node = [&](const std::string& ns, const std::string& iface, int node_rank) {
        return std::vector<std::string>{"ip", "netns", "exec", ns, KEEL_LAUNCH_BIN, "--nnodes", "2", "--node-rank",
                                        std::to_string(node_rank), "--master", master, "-n", "2", "--interface",
                                        iface, "--"};
    };
    // Each entry is one keel-launch (its ranks' exit codes become its own).
    expect_all_zero(run_ranks("one_all_reduce", 4, {0, 1}, std::chrono::seconds(60), {},
                              {node(hosts.ns[0], hosts.iface[0], 0), node(hosts.ns[1], hosts.iface[1], 1)}));
}

}  // namespace
