// What a peer's posted failure (comm/src/failure_notice.*) may name: the
// key's value comes from another process, so only a notice of another rank
// of this group is read; anything else is as if none was posted.
#include "failure_notice.hpp"

#include <keel/comm.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace {

constexpr std::chrono::milliseconds kBound{2000};

struct PlantedNotices : ::testing::Test {
    std::string dir = (std::filesystem::temp_directory_path() / "keel-notice-XXXXXX").string();
    keel::Store store = [this] {
        EXPECT_NE(::mkdtemp(dir.data()), nullptr);
        return keel::Store::file(dir).value();
    }();
    ~PlantedNotices() override { std::filesystem::remove_all(dir); }

    // The store keeps a key's first value: the last one planted goes first.
    void plant(std::string_view value) const {
        ASSERT_TRUE(store.erase("group/failed").ok());
        ASSERT_TRUE(store.set("group/failed", std::as_bytes(std::span(value.data(), value.size()))).ok());
    }
};

TEST_F(PlantedNotices, APeersNoticeIsReadWithItsRankAndError) {
    const keel::comm::FailureNotice notice(store, "group", 0, 2);
    EXPECT_FALSE(notice.read(kBound).has_value()) << "a notice read where none was posted";
    plant("rank 1: [Communicator::all_reduce] planted failure 3141");
    const std::optional<keel::comm::PeerFailure> peer = notice.read(kBound);
    ASSERT_TRUE(peer.has_value());
    EXPECT_EQ(peer->rank, 1);
    EXPECT_EQ(peer->error, "[Communicator::all_reduce] planted failure 3141");
}

TEST_F(PlantedNotices, ANoticeOfThisRankOrOfNoRankOfTheGroupIsNotRead) {
    const keel::comm::FailureNotice notice(store, "group", 0, 2);
    for (std::string_view value : {"rank 0: this rank's own", "rank 2: beyond a group of two", "rank -1: negative",
                                   "rank x: no number", "no rank at all"}) {
        plant(value);
        EXPECT_FALSE(notice.read(kBound).has_value()) << "read as a peer's failure: " << value;
    }
}

}  // namespace
