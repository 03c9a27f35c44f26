// Multi-process tests of keel::comm on cpu:0: each test starts N processes
// of keel_comm_rank (fork/exec) with the rank variables and a file store in
// a fresh temporary directory, loopback only, and judges their exit codes.
// A rank that does not finish within its deadline is killed and the test
// fails: a hang is a failure, never a stuck CI job.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct RankRun {
    std::vector<int> codes;  // exit code per process; -1 = killed at the deadline
};

// Starts one process per entry of `ranks` (its RANK), all with WORLD_SIZE
// `size`, and waits for them up to `deadline`.
RankRun run_ranks(const std::string& scenario, int size, const std::vector<int>& ranks,
              std::chrono::seconds deadline) {
    std::string dir = (fs::temp_directory_path() / "keel-comm-test-XXXXXX").string();
    EXPECT_NE(::mkdtemp(dir.data()), nullptr);
    std::vector<pid_t> pids;
    for (int rank : ranks) {
        const pid_t pid = ::fork();
        if (pid == 0) {
            ::setenv("RANK", std::to_string(rank).c_str(), 1);
            ::setenv("WORLD_SIZE", std::to_string(size).c_str(), 1);
            ::setenv("KEEL_COMM_STORE", ("file:" + dir).c_str(), 1);
            ::execl(KEEL_COMM_RANK_BIN, KEEL_COMM_RANK_BIN, scenario.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        pids.push_back(pid);
    }
    RankRun run;
    run.codes.assign(pids.size(), -1);
    const auto end = std::chrono::steady_clock::now() + deadline;
    std::size_t left = pids.size();
    while (left > 0 && std::chrono::steady_clock::now() < end) {
        for (std::size_t i = 0; i < pids.size(); ++i) {
            if (pids[i] == 0) continue;
            int status = 0;
            if (::waitpid(pids[i], &status, WNOHANG) == pids[i]) {
                run.codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                pids[i] = 0;
                --left;
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (pid_t& pid : pids) {
        if (pid == 0) continue;
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    return run;
}

std::vector<int> ranks_upto(int n) {
    std::vector<int> r;
    for (int i = 0; i < n; ++i) r.push_back(i);
    return r;
}

void expect_all_zero(const RankRun& run) {
    for (std::size_t i = 0; i < run.codes.size(); ++i)
        EXPECT_EQ(run.codes[i], 0) << "rank " << i << (run.codes[i] == -1 ? " hung (killed at the deadline)" : "");
}

TEST(CommMultiProcess, EveryCollectiveDtypeAndReductionIsExactOnTwoRanks) {
    expect_all_zero(run_ranks("collectives", 2, ranks_upto(2), std::chrono::seconds(120)));
}

TEST(CommMultiProcess, EveryCollectiveDtypeAndReductionIsExactOnFourRanks) {
    expect_all_zero(run_ranks("collectives", 4, ranks_upto(4), std::chrono::seconds(120)));
}

TEST(CommMultiProcess, BatchedSendsAndReceivesBothWaysArriveOnTwoAndFourRanks) {
    expect_all_zero(run_ranks("p2p", 2, ranks_upto(2), std::chrono::seconds(60)));
    expect_all_zero(run_ranks("p2p", 4, ranks_upto(4), std::chrono::seconds(60)));
}

TEST(CommMultiProcess, AKilledPeerFailsTheOperationWithinTheTimeout) {
    expect_all_zero(run_ranks("killed_peer", 2, ranks_upto(2), std::chrono::seconds(30)));
}

TEST(CommMultiProcess, ARankThatNeverArrivesFailsCreateWithinTheTimeout) {
    expect_all_zero(run_ranks("never_arrives", 2, {0}, std::chrono::seconds(30)));
}

TEST(CommMultiProcess, AbortFromAnotherThreadEndsAWaitingReceive) {
    expect_all_zero(run_ranks("abort", 2, ranks_upto(2), std::chrono::seconds(30)));
}

TEST(CommMultiProcess, BadInputGetsClearErrorsAndEnqueuesNothing) {
    expect_all_zero(run_ranks("bad_input", 2, ranks_upto(2), std::chrono::seconds(30)));
}

TEST(CommMultiProcess, CountsThatDifferBetweenRanksFailOnEveryRankNotHang) {
    expect_all_zero(run_ranks("mismatched_counts", 2, ranks_upto(2), std::chrono::seconds(30)));
}

TEST(CommMultiProcess, ASecondProcessClaimingARankIsRefused) {
    const RankRun run = run_ranks("duplicate_rank", 2, {0, 1, 0}, std::chrono::seconds(30));
    int refused = 0;
    for (int code : run.codes) {
        EXPECT_NE(code, -1) << "a process hung";
        refused += code == 3;
    }
    EXPECT_GE(refused, 1) << "no process was refused its rank";
}

}  // namespace
