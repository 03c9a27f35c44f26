// take_error: the one place where a keel_error* becomes a keel::Error.
#include "c_error.hpp"

#include <gtest/gtest.h>

namespace keel::detail {
namespace {

struct CountingError {
    keel_error c{};
    int* destroyed = nullptr;
};

void destroy_counting(keel_error* e) { ++*reinterpret_cast<CountingError*>(e)->destroyed; }

TEST(TakeError, NullIsSuccess) { EXPECT_TRUE(take_error(nullptr).ok()); }

TEST(TakeError, CopiesCodeAndMessageAndDestroysTheErrorExactlyOnce) {
    int destroyed = 0;
    CountingError e{{KEEL_ERROR_STRUCT_SIZE, KEEL_STATUS_OUT_OF_MEMORY, "[x alloc] no room", &destroy_counting},
                    &destroyed};
    Result<void> r = take_error(&e.c);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_OUT_OF_MEMORY);
    EXPECT_EQ(r.error().message(), "[x alloc] no room");
    EXPECT_EQ(destroyed, 1);
}

TEST(TakeError, AnErrorWithStatusOkOrNoMessageBecomesInternal) {
    int destroyed = 0;
    CountingError ok_status{{KEEL_ERROR_STRUCT_SIZE, KEEL_STATUS_OK, "odd", &destroy_counting}, &destroyed};
    Result<void> r = take_error(&ok_status.c);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_INTERNAL);
    EXPECT_NE(r.error().message().find("status OK"), std::string::npos);

    CountingError no_message{{KEEL_ERROR_STRUCT_SIZE, KEEL_STATUS_NOT_FOUND, nullptr, &destroy_counting},
                             &destroyed};
    Result<void> r2 = take_error(&no_message.c);
    ASSERT_FALSE(r2.ok());
    EXPECT_EQ(r2.error().code(), KEEL_STATUS_NOT_FOUND);
    EXPECT_FALSE(r2.error().message().empty());
    EXPECT_EQ(destroyed, 2);
}

}  // namespace
}  // namespace keel::detail
