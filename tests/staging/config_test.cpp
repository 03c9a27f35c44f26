// The one reader of staging's settings: each variable lands in the field
// every staging path reads, what is unset keeps the code's value, and a value
// that does not parse is an error naming the variable.
#include <keel/staging/config.hpp>
#include <keel/staging/pageable_staging.hpp>
#include <keel/testing/scoped_env.hpp>

#include "fake_stream.hpp"

#include <gtest/gtest.h>

namespace keel::staging {
namespace {

using keel::testing::ScopedEnv;

const ScopedEnv::Vars kUnset = {{"KEEL_PAGEABLE_CHUNK_KIB", std::nullopt},
                                {"KEEL_PAGEABLE_BLOCKS", std::nullopt},
                                {"KEEL_PAGEABLE_STAGING_MIB", std::nullopt},
                                {"KEEL_PAGEABLE_THREADS", std::nullopt}};

TEST(StagingConfig, TheEnvironmentOverridesOnlyTheFieldsItsVariablesName) {
    ScopedEnv clean(kUnset);
    StagingConfig code;
    code.chunk_bytes = 2 * MiB;
    code.pageable.blocks_per_copy = 2;
    code.comm_cached_bytes = 3 * MiB;
    {
        auto same = with_environment(code);
        ASSERT_TRUE(same.ok()) << same.error().message();
        EXPECT_EQ(*same, code);
    }
    ScopedEnv set({{"KEEL_PAGEABLE_CHUNK_KIB", "512"},
                   {"KEEL_PAGEABLE_STAGING_MIB", "32"},
                   {"KEEL_PAGEABLE_THREADS", "3"}});
    auto read = with_environment(code);
    ASSERT_TRUE(read.ok()) << read.error().message();
    StagingConfig expected = code;
    expected.pageable.chunk_bytes = 512 * KiB;
    expected.pageable.capacity = 32 * MiB;
    expected.copy_threads = 3;  // both kinds of staging copy with these threads
    EXPECT_EQ(*read, expected);

    // PageableStaging takes what was read.
    PageableStaging staging(std::make_unique<testing::HeapPinned>(std::make_shared<testing::HeapPinned::Counts>()), *read);
    EXPECT_EQ(staging.config(), expected.pageable);
}

TEST(StagingConfig, AValueThatDoesNotParseIsAnErrorNamingItsVariable) {
    ScopedEnv clean(kUnset);
    ScopedEnv bad("KEEL_PAGEABLE_BLOCKS", "0");
    auto read = with_environment(StagingConfig{});
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.error().code(), KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(read.error().message().find("KEEL_PAGEABLE_BLOCKS"), std::string::npos) << read.error().message();
}

}  // namespace
}  // namespace keel::staging
