// Discovery helpers and log levels.
#include "discovery.hpp"
#include "logger.hpp"

#include <gtest/gtest.h>

namespace keel::detail {
namespace {

TEST(Discovery, DeviceTypeIsLowercaseLettersDigitsAndUnderscores) {
    EXPECT_TRUE(is_valid_device_type("cpu"));
    EXPECT_TRUE(is_valid_device_type("level_zero2"));
    EXPECT_FALSE(is_valid_device_type(""));
    EXPECT_FALSE(is_valid_device_type("CPU"));
    EXPECT_FALSE(is_valid_device_type("cu-da"));
    EXPECT_FALSE(is_valid_device_type("a:b"));
}

TEST(Discovery, TypeComesFromTheFileNameLibkeelTypeSo) {
    EXPECT_EQ(type_from_file_name("/x/libkeel_cpu.so"), "cpu");
    EXPECT_EQ(type_from_file_name("libkeel_level_zero.so"), "level_zero");
    EXPECT_EQ(type_from_file_name("/x/libkeel_.so"), std::nullopt);
    EXPECT_EQ(type_from_file_name("/x/libkeel_Cpu.so"), std::nullopt);
    EXPECT_EQ(type_from_file_name("/x/keel_cpu.so"), std::nullopt);
    EXPECT_EQ(type_from_file_name("/x/libkeel_cpu.so.1"), std::nullopt);
}

TEST(Discovery, SearchPathIsColonSeparatedWithoutEmptyEntries) {
    using P = std::vector<std::filesystem::path>;
    EXPECT_EQ(split_search_path(""), P{});
    EXPECT_EQ(split_search_path("/a"), P{"/a"});
    EXPECT_EQ(split_search_path("/a::/b:"), (P{"/a", "/b"}));
    EXPECT_EQ(split_search_path(":/a/libkeel_x.so"), P{"/a/libkeel_x.so"});
}

TEST(Discovery, SearchOrderIsOptionsThenEnvironmentThenDefaults) {
    ::setenv("KEEL_PLUGIN_PATH", "/env1:/env2", 1);
    RuntimeOptions o;
    o.plugin_path = {"/opt1"};
    auto path = build_search_path(o);
    ::unsetenv("KEEL_PLUGIN_PATH");
    ASSERT_EQ(path.size(), 4u);
    EXPECT_EQ(path[0].path, "/opt1");
    EXPECT_EQ(path[0].origin, "options");
    EXPECT_EQ(path[1].path, "/env1");
    EXPECT_EQ(path[2].origin, "KEEL_PLUGIN_PATH");
    EXPECT_EQ(path[3].origin, "beside the runtime");
    EXPECT_EQ(path[3].path.filename(), "plugins");
}

TEST(Logging, LevelNamesAreParsedCaseInsensitively) {
    EXPECT_EQ(parse_log_level("trace"), spdlog::level::trace);
    EXPECT_EQ(parse_log_level("DEBUG"), spdlog::level::debug);
    EXPECT_EQ(parse_log_level("info"), spdlog::level::info);
    EXPECT_EQ(parse_log_level("warn"), spdlog::level::warn);
    EXPECT_EQ(parse_log_level("warning"), spdlog::level::warn);
    EXPECT_EQ(parse_log_level("error"), spdlog::level::err);
    EXPECT_EQ(parse_log_level("off"), spdlog::level::off);
    EXPECT_EQ(parse_log_level("loud"), std::nullopt);
    EXPECT_EQ(parse_log_level(""), std::nullopt);
}

TEST(Logging, TheLoggerIsNamedKeelAndRegistered) {
    EXPECT_EQ(logger()->name(), "keel");
    EXPECT_EQ(spdlog::get("keel"), logger());
}

}  // namespace
}  // namespace keel::detail
