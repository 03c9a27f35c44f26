// Result never lets a program go on with a value it does not have: taking
// the value of an error (or the error of a value) prints the error and
// where it was taken, and aborts, in every build type.
#include <keel/result.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace keel {
namespace {

Result<int> not_found() { return Error(KEEL_STATUS_NOT_FOUND, "[Runtime::device] no device named 'x:0'"); }
Result<void> failed() { return Error(KEEL_STATUS_OUT_OF_RANGE, "[Stream::copy] 101 bytes do not fit"); }

class ResultDeath : public ::testing::Test {
protected:
    void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(ResultDeath, ValueOfAnErrorPrintsTheErrorAndTheCallersLineAndAborts) {
    EXPECT_DEATH((void)not_found().value(),
                 "Result::value\\(\\) on an error: NOT_FOUND: \\[Runtime::device\\] no device named 'x:0'"
                 "(.|\n)*result_test.cpp:[0-9]+");
}

TEST_F(ResultDeath, ValueOfAnErrorAbortsOnLvaluesAndConstToo) {
    Result<int> r = not_found();
    const Result<int>& c = r;
    EXPECT_DEATH((void)r.value(), "NOT_FOUND");
    EXPECT_DEATH((void)c.value(), "NOT_FOUND");
}

TEST_F(ResultDeath, DereferencingAnErrorAborts) {
    Result<std::string> r = Error(KEEL_STATUS_INTERNAL, "[here] broken");
    EXPECT_DEATH((void)*r, "INTERNAL: \\[here\\] broken");
    EXPECT_DEATH((void)r->size(), "INTERNAL: \\[here\\] broken");
}

TEST_F(ResultDeath, ExpectPrintsItsContextWithTheError) {
    EXPECT_DEATH((void)not_found().expect("opening the model device"),
                 "opening the model device: NOT_FOUND: \\[Runtime::device\\](.|\n)*result_test.cpp:[0-9]+");
    EXPECT_DEATH(failed().expect("uploading the weights"),
                 "uploading the weights: OUT_OF_RANGE: \\[Stream::copy\\] 101 bytes do not fit");
}

TEST_F(ResultDeath, ValueOfAFailedVoidResultAborts) {
    EXPECT_DEATH(failed().value(), "OUT_OF_RANGE: \\[Stream::copy\\]");
}

TEST_F(ResultDeath, ErrorOfASuccessAborts) {
    Result<int> r = 3;
    EXPECT_DEATH((void)r.error(), "Result::error\\(\\) on a success(.|\n)*result_test.cpp:[0-9]+");
    EXPECT_DEATH((void)Result<void>().error(), "Result::error\\(\\) on a success");
}

TEST(Result, TheValueAndTheErrorAreThereWhenTheyExist) {
    Result<std::unique_ptr<int>> r = std::make_unique<int>(4);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r.value(), 4);
    EXPECT_EQ(**r, 4);
    std::unique_ptr<int> taken = std::move(r).expect("never fails");
    EXPECT_EQ(*taken, 4);
    Result<int> e = not_found();
    EXPECT_EQ(e.error().code(), KEEL_STATUS_NOT_FOUND);
    EXPECT_EQ(std::move(e).value_or(9), 9);
    EXPECT_EQ(failed().error().code(), KEEL_STATUS_OUT_OF_RANGE);  // fine: it is an error
    ok().value();      // fine: it is a success
}

}  // namespace
}  // namespace keel
