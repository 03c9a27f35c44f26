// The plugin on a machine without a Level Zero driver (this one, CI): it
// loads, reports zero devices, and says why in Level Zero's words. Run
// without ZE_ENABLE_ALT_DRIVERS, so the real loader finds no driver.
#include "level_zero_test.hpp"

#include <cstddef>
#include <cstdlib>

namespace keel::level_zero_test {
namespace {

TEST(LevelZeroWithoutDriver, LoadsWithZeroDevicesAndSaysWhyInLevelZerosWords) {
    ASSERT_FALSE(env::foreign("ZE_ENABLE_ALT_DRIVERS")) << "this test needs the loader to find no driver";
    LoadedPlugin plugin(plugin_path());
    ASSERT_FALSE(plugin.init_error()) << plugin.init_error()->message;
    EXPECT_EQ(plugin.device_count(), 0u);
    const std::string status = plugin.status();
    EXPECT_TRUE(contains(status, "no Level Zero driver: zeInit: ZE_RESULT_ERROR_UNINITIALIZED")) << status;
    keel_device d = nullptr;
    const CError o = outcome(plugin.api().device_get(0, &d));
    EXPECT_EQ(o.code, KEEL_STATUS_NOT_FOUND);
    EXPECT_TRUE(contains(o.message, "no device level_zero:0 (0 device(s)): no Level Zero driver")) << o.message;
    EXPECT_EQ(d, nullptr);
    bool logged = false;
    for (const auto& line : plugin.logs()) logged |= contains(line.message, "ZE_RESULT_ERROR_UNINITIALIZED");
    EXPECT_TRUE(logged) << "discovery's outcome is logged";
}

TEST(LevelZeroWithoutDriver, WithoutTheLoaderItStillLoadsAndSaysSo) {
    LoadedPlugin plugin(plugin_path(),
                        LoadedPlugin::Options{{{"KEEL_LEVEL_ZERO_LOADER", "/nonexistent/libze_loader.so.1"}}});
    ASSERT_FALSE(plugin.init_error()) << plugin.init_error()->message;
    EXPECT_EQ(plugin.device_count(), 0u);
    const std::string status = plugin.status();
    EXPECT_TRUE(contains(status, "no Level Zero loader: cannot open /nonexistent/libze_loader.so.1: No such file or directory"))
        << status;
}

TEST(LevelZeroWithoutDriver, TheTableHasEveryEntryButMemoryInfo) {
    LoadedPlugin plugin(plugin_path());
    ASSERT_FALSE(plugin.init_error()) << plugin.init_error()->message;
    const keel_plugin_api& api = plugin.api();
    EXPECT_EQ(api.struct_size, KEEL_PLUGIN_API_STRUCT_SIZE);
    EXPECT_EQ(api.abi_major, KEEL_ABI_VERSION_MAJOR);
    // Every pointer after the header, except device_memory_info (Level
    // Zero's core API reports no free memory), stream_annotate_range
    // (only a checking plugin offers it) and the communication set of 1.4
    // and 1.5 (Level Zero communicates through the runtime's generic path)
    // and what 1.6 added after plugin_option_info (no IPC or peer entries yet).
    const auto* entries = reinterpret_cast<void* const*>(reinterpret_cast<const char*>(&api) + 16);
    const std::size_t count = (KEEL_PLUGIN_API_STRUCT_SIZE - 16) / sizeof(void*);
    const std::size_t memory_info = (offsetof(keel_plugin_api, device_memory_info) - 16) / sizeof(void*);
    const std::size_t annotate = (offsetof(keel_plugin_api, stream_annotate_range) - 16) / sizeof(void*);
    const std::size_t comm_first = (offsetof(keel_plugin_api, comm_create) - 16) / sizeof(void*);
    const std::size_t comm_last = (offsetof(keel_plugin_api, comm_send_recv) - 16) / sizeof(void*);
    const std::size_t comm_sized = (offsetof(keel_plugin_api, comm_send_recv_sized) - 16) / sizeof(void*);
    const std::size_t after_options = (offsetof(keel_plugin_api, plugin_option_info) - 16) / sizeof(void*) + 1;
    for (std::size_t i = 0; i < count; ++i) {
        const bool comm = (i >= comm_first && i <= comm_last) || i == comm_sized;
        if (i == memory_info || i == annotate || comm || i >= after_options)
            EXPECT_EQ(entries[i], nullptr) << "entry " << i;
        else EXPECT_NE(entries[i], nullptr) << "entry " << i;
    }
    keel_plugin_info info{};
    info.struct_size = KEEL_PLUGIN_INFO_STRUCT_SIZE;
    KEEL_ASSERT_OK(api.plugin_info(&info));
    EXPECT_STREQ(info.device_type, "level_zero");
}

TEST(LevelZeroWithoutDriver, RefusesAnotherAbiMajorNamingBothVersions) {
    LoadedPlugin plugin(plugin_path(), LoadedPlugin::Options{{}, KEEL_ABI_VERSION_MAJOR + 1});
    ASSERT_TRUE(plugin.init_error());
    EXPECT_EQ(plugin.init_error()->code, KEEL_STATUS_VERSION_MISMATCH);
    EXPECT_TRUE(contains(plugin.init_error()->message,
                         "the runtime offers ABI " + std::to_string(KEEL_ABI_VERSION_MAJOR + 1)))
        << plugin.init_error()->message;
}

TEST(LevelZeroWithoutDriver, InitialisesAgainAfterShutdown) {
    for (int round = 0; round < 3; ++round) {
        LoadedPlugin plugin(plugin_path());
        ASSERT_FALSE(plugin.init_error()) << plugin.init_error()->message;
        EXPECT_EQ(plugin.device_count(), 0u);
        EXPECT_FALSE(plugin.status().empty());
    }
}

}  // namespace
}  // namespace keel::level_zero_test
