// Starts the ranks of a multi-process test of keel::comm (fork/exec of
// keel_comm_rank) and collects their exit codes, killing any that outlive
// the deadline.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

namespace keel::testing {

namespace fs = std::filesystem;

struct RankRun {
    std::vector<int> codes;  // exit code per process; -1 = killed at the deadline
};

// Starts one process per entry of `ranks` (its RANK), all with WORLD_SIZE
// `size`, and waits for them up to `deadline`.
// `prefix[i]`, when given, is a command the i-th process runs the rank
// under ("ip netns exec ns env VAR=value").
inline RankRun run_ranks(const std::string& scenario, int size, const std::vector<int>& ranks,
              std::chrono::seconds deadline, const std::vector<std::pair<std::string, std::string>>& env = {},
              const std::vector<std::vector<std::string>>& prefix = {}) {
    std::string dir = (fs::temp_directory_path() / "keel-comm-test-XXXXXX").string();
    EXPECT_NE(::mkdtemp(dir.data()), nullptr);
    std::vector<pid_t> pids;
    for (std::size_t index = 0; index < ranks.size(); ++index) {
        const int rank = ranks[index];
        std::vector<std::string> command = index < prefix.size() ? prefix[index] : std::vector<std::string>{};
        command.push_back(KEEL_COMM_RANK_BIN);
        command.push_back(scenario);
        std::vector<char*> argv;
        for (std::string& word : command) argv.push_back(word.data());
        argv.push_back(nullptr);
        const pid_t pid = ::fork();
        if (pid == 0) {
            ::setenv("RANK", std::to_string(rank).c_str(), 1);
            ::setenv("WORLD_SIZE", std::to_string(size).c_str(), 1);
            ::setenv("KEEL_COMM_STORE", ("file:" + dir).c_str(), 1);  // env may override it
            for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
            ::execvp(argv[0], argv.data());
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

inline std::vector<int> ranks_upto(int n) {
    std::vector<int> r;
    for (int i = 0; i < n; ++i) r.push_back(i);
    return r;
}

inline void expect_all_zero(const RankRun& run) {
    for (std::size_t i = 0; i < run.codes.size(); ++i)
        EXPECT_EQ(run.codes[i], 0) << "rank " << i << (run.codes[i] == -1 ? " hung (killed at the deadline)" : "");
}

}  // namespace keel::testing
