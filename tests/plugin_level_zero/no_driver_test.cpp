// The plugin on a machine without a Level Zero driver (this one, CI): it
// loads, reports zero devices, and says why in Level Zero's words. Run
// without ZE_ENABLE_ALT_DRIVERS, so the real loader finds no driver.
#include "plugin_fixture.hpp"

#include <cstdlib>

namespace keel::level_zero_test {
namespace {

TEST(LevelZeroWithoutDriver, LoadsWithZeroDevicesAndSaysWhyInLevelZerosWords) {
    ASSERT_EQ(std::getenv("ZE_ENABLE_ALT_DRIVERS"), nullptr) << "this test needs the loader to find no driver";
    Plugin plugin;
    ASSERT_NE(plugin.api(), nullptr);
    EXPECT_EQ(plugin.device_count(), 0u);
    const std::string status = plugin.status();
    EXPECT_NE(status.find("no Level Zero driver: zeInit: ZE_RESULT_ERROR_UNINITIALIZED"), std::string::npos)
        << status;
    keel_device d = nullptr;
    const Outcome o = take(plugin.api()->device_get(0, &d));
    EXPECT_EQ(o.code, KEEL_STATUS_NOT_FOUND);
    EXPECT_NE(o.message.find("no device level_zero:0 (0 device(s)): no Level Zero driver"), std::string::npos)
        << o.message;
    EXPECT_EQ(d, nullptr);
    bool logged = false;
    for (const std::string& line : plugin.log()) logged |= line.find("ZE_RESULT_ERROR_UNINITIALIZED") != std::string::npos;
    EXPECT_TRUE(logged) << "discovery's outcome is logged at info level";
}

TEST(LevelZeroWithoutDriver, WithoutTheLoaderItStillLoadsAndSaysSo) {
    setenv("KEEL_LEVEL_ZERO_LOADER", "/nonexistent/libze_loader.so.1", 1);
    Plugin plugin;
    unsetenv("KEEL_LEVEL_ZERO_LOADER");
    ASSERT_NE(plugin.api(), nullptr);
    EXPECT_EQ(plugin.device_count(), 0u);
    const std::string status = plugin.status();
    EXPECT_NE(status.find("no Level Zero loader: /nonexistent/libze_loader.so.1: cannot open shared object file"),
              std::string::npos)
        << status;
}

TEST(LevelZeroWithoutDriver, TheTableHasEveryEntryButMemoryInfo) {
    Plugin plugin;
    ASSERT_NE(plugin.api(), nullptr);
    const keel_plugin_api& api = *plugin.api();
    EXPECT_EQ(api.struct_size, KEEL_PLUGIN_API_STRUCT_SIZE);
    EXPECT_EQ(api.abi_major, KEEL_ABI_VERSION_MAJOR);
    // Every pointer after the header, except device_memory_info: Level
    // Zero's core API reports no free memory.
    const auto* entries = reinterpret_cast<void* const*>(reinterpret_cast<const char*>(&api) + 16);
    const std::size_t count = (KEEL_PLUGIN_API_STRUCT_SIZE - 16) / sizeof(void*);
    const std::size_t memory_info = (offsetof(keel_plugin_api, device_memory_info) - 16) / sizeof(void*);
    for (std::size_t i = 0; i < count; ++i) {
        if (i == memory_info) EXPECT_EQ(entries[i], nullptr) << "entry " << i;
        else EXPECT_NE(entries[i], nullptr) << "entry " << i;
    }
    keel_plugin_info info{};
    info.struct_size = KEEL_PLUGIN_INFO_STRUCT_SIZE;
    ASSERT_TRUE(succeeded(api.plugin_info(&info)));
    EXPECT_STREQ(info.device_type, "level_zero");
}

TEST(LevelZeroWithoutDriver, RefusesAnotherAbiMajorNamingBothVersions) {
    const keel_plugin_entry_fn init = entry_symbol();
    ASSERT_NE(init, nullptr);
    keel_host_services host{};
    host.struct_size = KEEL_HOST_SERVICES_STRUCT_SIZE;
    host.abi_major = KEEL_ABI_VERSION_MAJOR + 1;
    const keel_plugin_api* api = nullptr;
    const Outcome o = take(init(&host, &api));
    EXPECT_EQ(o.code, KEEL_STATUS_VERSION_MISMATCH);
    EXPECT_NE(o.message.find("the runtime offers ABI " + std::to_string(KEEL_ABI_VERSION_MAJOR + 1)), std::string::npos)
        << o.message;
    EXPECT_EQ(api, nullptr);
}

TEST(LevelZeroWithoutDriver, InitialisesAgainAfterShutdown) {
    for (int round = 0; round < 3; ++round) {
        Plugin plugin;
        ASSERT_NE(plugin.api(), nullptr);
        EXPECT_EQ(plugin.device_count(), 0u);
        EXPECT_FALSE(plugin.status().empty());
    }
}

}  // namespace
}  // namespace keel::level_zero_test
