// The hang doctor on communication, one process per rank.
// A rank that never calls the collective (3 ranks): the two that wait get
// the diagnosis at their hang timeout, the third asks for it, and each
// message names rank 2 as not arrived at all_reduce #1 (keel_diagnose_rank
// checks its own message; the test checks that every rank did and ended).
#include "rank_runner.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

TEST(DiagnoseComm, ARankThatNeverCallsTheCollectiveIsNamedOnEveryRank) {
    std::string dir = (std::filesystem::temp_directory_path() / "keel-diagnose-XXXXXX").string();
    ASSERT_NE(::mkdtemp(dir.data()), nullptr);
    const keel::testing::RankRun run = keel::testing::run_ranks(dir, 3, {0, 1, 2}, std::chrono::seconds(60));
    for (std::size_t r = 0; r < run.codes.size(); ++r) EXPECT_EQ(run.codes[r], 0) << "rank " << r;
    for (int r = 0; r < 2; ++r) {
        std::ifstream in(std::filesystem::path(dir) / ("report-" + std::to_string(r) + ".json"));
        std::stringstream text;
        text << in.rdbuf();
        EXPECT_NE(text.str().find("ranks not arrived at all_reduce #1"), std::string::npos) << text.str();
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
}

// Two communicators whose all_reduces two ranks enqueued in opposite orders
// on one stream each: every rank's report names the cycle through both.
TEST(DiagnoseComm, ACycleThroughTwoCommunicatorsIsNamedOnEveryRank) {
    std::string dir = (std::filesystem::temp_directory_path() / "keel-diagnose-XXXXXX").string();
    ASSERT_NE(::mkdtemp(dir.data()), nullptr);
    const keel::testing::RankRun run = keel::testing::run_ranks("cycle:" + dir, 2, {0, 1}, std::chrono::seconds(60));
    for (std::size_t r = 0; r < run.codes.size(); ++r) EXPECT_EQ(run.codes[r], 0) << "rank " << r;
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
}

}  // namespace
