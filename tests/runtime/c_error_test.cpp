// keel_error* <-> Error: the one pair of conversions (<keel/c_error.hpp>).
#include <keel/c_error.hpp>

#include <gtest/gtest.h>

namespace keel {
namespace {

struct CountingError {
    keel_error c{};
    int* destroyed = nullptr;
};

void destroy_counting(keel_error* e) { ++*reinterpret_cast<CountingError*>(e)->destroyed; }

TEST(TakeCError, NullIsSuccess) { EXPECT_TRUE(take_c_error(nullptr).ok()); }

TEST(TakeCError, CopiesCodeAndMessageAndDestroysTheErrorExactlyOnce) {
    int destroyed = 0;
    CountingError e{{KEEL_ERROR_STRUCT_SIZE, KEEL_STATUS_OUT_OF_MEMORY, "[x alloc] no room", &destroy_counting},
                    &destroyed};
    Result<void> r = take_c_error(&e.c);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_OUT_OF_MEMORY);
    EXPECT_EQ(r.error().message(), "[x alloc] no room");
    EXPECT_EQ(destroyed, 1);
}

TEST(TakeCError, AnErrorWithStatusOkOrNoMessageBecomesInternal) {
    int destroyed = 0;
    CountingError ok_status{{KEEL_ERROR_STRUCT_SIZE, KEEL_STATUS_OK, "odd", &destroy_counting}, &destroyed};
    Result<void> r = take_c_error(&ok_status.c);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_INTERNAL);
    EXPECT_NE(r.error().message().find("status OK"), std::string::npos);

    CountingError no_message{{KEEL_ERROR_STRUCT_SIZE, KEEL_STATUS_NOT_FOUND, nullptr, &destroy_counting},
                             &destroyed};
    Result<void> r2 = take_c_error(&no_message.c);
    ASSERT_FALSE(r2.ok());
    EXPECT_EQ(r2.error().code(), KEEL_STATUS_NOT_FOUND);
    EXPECT_FALSE(r2.error().message().empty());
    EXPECT_EQ(destroyed, 2);
}

TEST(MakeCError, RoundTripsThroughTakeAndNeverCarriesStatusOk) {
    Result<void> r = take_c_error(make_c_error(KEEL_STATUS_NOT_FOUND, "[t x] gone"));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_NOT_FOUND);
    EXPECT_EQ(r.error().message(), "[t x] gone");
    keel_error* ok_code = make_c_error(KEEL_STATUS_OK, "odd");
    EXPECT_EQ(ok_code->code, KEEL_STATUS_INTERNAL) << "status OK would read as success";
    keel_error_destroy(ok_code);
}

}  // namespace
}  // namespace keel
