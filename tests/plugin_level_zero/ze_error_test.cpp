// Every ze_result_t of the Level Zero headers the plugin is built with has
// its Level Zero name in keel's messages and a keel status; the list is read
// from ze_api.h itself, so a newer header cannot add a result unnoticed.
#include "ze_error.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace keel::level_zero {
namespace {

std::vector<std::pair<std::string, ze_result_t>> results_in_header() {
    std::ifstream header(KEEL_ZE_API_HEADER);
    const std::regex entry(R"(^\s+(ZE_RESULT_[A-Z0-9_]+) = (0x[0-9a-fA-F]+|[0-9]+),)");
    std::vector<std::pair<std::string, ze_result_t>> found;
    std::string line;
    std::smatch m;
    while (std::getline(header, line))
        if (std::regex_search(line, m, entry) && m[1] != "ZE_RESULT_FORCE_UINT32")
            found.emplace_back(m[1], static_cast<ze_result_t>(std::stoul(m[2], nullptr, 0)));
    return found;
}

TEST(ZeResult, EveryResultOfTheHeadersHasItsNameAndAStatus) {
    // A test binary carried to a machine without Level Zero's headers (the
    // GPU check) has nothing to read; where the plugin is built they exist.
    if (!std::ifstream(KEEL_ZE_API_HEADER)) GTEST_SKIP() << "no " << KEEL_ZE_API_HEADER << " on this machine";
    const auto results = results_in_header();
    ASSERT_GE(results.size(), 40u) << "the header's result list was not found";
    for (const auto& [name, value] : results) {
        EXPECT_EQ(ze_result_name(value), name);
        if (value == ZE_RESULT_SUCCESS) EXPECT_EQ(status_from_ze(value), KEEL_STATUS_OK);
        else EXPECT_NE(status_from_ze(value), KEEL_STATUS_OK) << name;
    }
}

TEST(ZeResult, StatusesFollowWhatTheResultMeans) {
    const std::pair<ze_result_t, Status> expected[] = {
        {ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, KEEL_STATUS_OUT_OF_MEMORY},
        {ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, KEEL_STATUS_OUT_OF_MEMORY},
        {ZE_RESULT_ERROR_DEVICE_LOST, KEEL_STATUS_DEVICE_ERROR},
        {ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET, KEEL_STATUS_DEVICE_ERROR},
        {ZE_RESULT_ERROR_UNKNOWN, KEEL_STATUS_DEVICE_ERROR},
        {ZE_RESULT_ERROR_UNINITIALIZED, KEEL_STATUS_UNAVAILABLE},
        {ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE, KEEL_STATUS_UNAVAILABLE},
        {ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, KEEL_STATUS_UNIMPLEMENTED},
        {ZE_RESULT_ERROR_INVALID_ARGUMENT, KEEL_STATUS_INVALID_ARGUMENT},
        {ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE, KEEL_STATUS_INVALID_ARGUMENT},
        {ZE_RESULT_ERROR_OVERLAPPING_REGIONS, KEEL_STATUS_INVALID_ARGUMENT},
        {ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, KEEL_STATUS_FAILED_PRECONDITION},
        {ZE_RESULT_NOT_READY, KEEL_STATUS_FAILED_PRECONDITION},
        {ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, KEEL_STATUS_INTERNAL},
    };
    for (const auto& [result, status] : expected)
        EXPECT_EQ(status_name(status_from_ze(result)), std::string(status_name(status))) << ze_result_name(result);
    EXPECT_TRUE(is_device_fatal(ZE_RESULT_ERROR_DEVICE_LOST));
    EXPECT_FALSE(is_device_fatal(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY));
}

TEST(ZeResult, AResultNewerThanTheHeadersIsADeviceErrorNamedByItsValue) {
    const auto future = static_cast<ze_result_t>(0x7ff00042);
    EXPECT_EQ(ze_result_name(future), "ze_result_t 0x7ff00042");
    EXPECT_EQ(status_from_ze(future), KEEL_STATUS_DEVICE_ERROR);
}

TEST(ZeResult, TheMessageNamesTheFunctionAndTheResult) {
    const Error e = ZeCall{"zeMemAllocDevice", ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY}.error("64 bytes");
    EXPECT_EQ(e.code(), KEEL_STATUS_OUT_OF_MEMORY);
    EXPECT_EQ(e.message(), "zeMemAllocDevice: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY (64 bytes)");
}

}  // namespace
}  // namespace keel::level_zero
