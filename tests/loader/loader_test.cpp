// The loader: good plugins load, broken ones are rejected with a reason that
// names the problem while the good one keeps working, and the search path
// (options, KEEL_PLUGIN_PATH) behaves as documented.
#include "test_support.hpp"

#include <keel/keel.hpp>

#include <gtest/gtest.h>

namespace keel::test {
namespace {

std::vector<std::string> device_names(const Runtime& rt) {
    std::vector<std::string> names;
    for (const Device& d : rt.devices()) names.push_back(d.name());
    return names;
}

TEST(Loader, GoodPluginLoadsWithItsDevicesAndDescription) {
    auto rt = Runtime::create(only({fake_dir("good")}));
    ASSERT_TRUE(rt.ok()) << rt.error().message();
    ASSERT_EQ(rt->plugins().size(), 1u);
    const PluginInfo& p = rt->plugins()[0];
    EXPECT_EQ(p.path, fs::weakly_canonical(fake_file("good", "fake")));
    EXPECT_EQ(p.type, "fake");
    EXPECT_EQ(p.version, "0.0.1");
    EXPECT_EQ(p.abi_major, KEEL_ABI_VERSION_MAJOR);
    EXPECT_EQ(p.abi_minor, KEEL_ABI_VERSION_MINOR);
    EXPECT_EQ(p.table_size, KEEL_PLUGIN_API_STRUCT_SIZE);
    EXPECT_EQ(p.status, "a test double");
    EXPECT_EQ(p.device_count, 2u);
    EXPECT_TRUE(rt->rejected_plugins().empty());
    EXPECT_EQ(device_names(*rt), (std::vector<std::string>{"fake:0", "fake:1"}));
}

TEST(Loader, DevicePropertiesAreReadFromThePlugin) {
    auto rt = Runtime::create(only({fake_dir("good")}));
    ASSERT_TRUE(rt.ok());
    auto dev = rt->device("fake:1");
    ASSERT_TRUE(dev.ok()) << dev.error().message();
    EXPECT_EQ(dev->name(), "fake:1");
    EXPECT_EQ(dev->type(), "fake");
    EXPECT_EQ(dev->index(), 1u);
    EXPECT_EQ(dev->properties().name, "Fake device 1");
    EXPECT_EQ(dev->properties().vendor, "keel tests");
    EXPECT_EQ(dev->properties().total_memory, 64ull << 20);
    EXPECT_EQ(dev->properties().max_allocation, 64ull << 20) << "0 from the plugin means total_memory";
    EXPECT_EQ(dev->properties().alloc_alignment, 256u);
    EXPECT_TRUE(dev->has(DeviceCapability::host_addressable));
    EXPECT_TRUE(dev->has(DeviceCapability::event_timing));
    EXPECT_FALSE(dev->has(DeviceCapability::pinned_memory));
}

TEST(Loader, WrongDeviceNameIsNotFoundAndListsTheNamesThatExist) {
    auto rt = Runtime::create(only({fake_dir("good")}));
    ASSERT_TRUE(rt.ok());
    auto dev = rt->device("cpu:7");
    ASSERT_FALSE(dev.ok());
    EXPECT_EQ(dev.error().code(), KEEL_STATUS_NOT_FOUND);
    EXPECT_NE(dev.error().message().find("'cpu:7'"), std::string::npos) << dev.error().message();
    EXPECT_NE(dev.error().message().find("fake:0, fake:1"), std::string::npos)
        << dev.error().message();
}

TEST(Loader, FindingNoPluginsIsNotAnErrorAndDeviceLookupSaysNoneLoaded) {
    auto rt = Runtime::create(only({}));
    ASSERT_TRUE(rt.ok());
    EXPECT_TRUE(rt->plugins().empty());
    EXPECT_TRUE(rt->devices().empty());
    auto dev = rt->device("cpu:0");
    ASSERT_FALSE(dev.ok());
    EXPECT_NE(dev.error().message().find("no devices are loaded"), std::string::npos)
        << dev.error().message();
}

// ---- each broken plugin is rejected, naming the problem -------------------------

struct BrokenCase {
    std::string dir;
    std::string type;  // file libkeel_<type>.so
    Status status;
    std::string reason;  // must appear in the reason
};

void PrintTo(const BrokenCase& c, std::ostream* os) { *os << c.dir; }

class BrokenPlugin : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(BrokenPlugin, IsRejectedWithAReasonAndOneWarningWhileTheGoodPluginStillLoads) {
    const BrokenCase& c = GetParam();
    LogCapture log;
    // The good plugin first, so that the duplicate is the second of its type.
    auto rt = Runtime::create(only({fake_dir("good"), fake_dir(c.dir)}));
    ASSERT_TRUE(rt.ok());

    ASSERT_EQ(rt->plugins().size(), 1u);
    EXPECT_EQ(rt->plugins()[0].type, "fake");
    EXPECT_EQ(rt->plugins()[0].version, "0.0.1") << "the first plugin of a type wins";
    EXPECT_TRUE(rt->device("fake:0").ok());

    ASSERT_EQ(rt->rejected_plugins().size(), 1u);
    const RejectedPlugin& r = rt->rejected_plugins()[0];
    EXPECT_EQ(r.path.filename(), "libkeel_" + c.type + ".so");
    EXPECT_EQ(r.path.parent_path().filename(), c.dir);
    EXPECT_EQ(r.status, c.status) << status_name(r.status) << ": " << r.reason;
    EXPECT_NE(r.reason.find(c.reason), std::string::npos) << r.reason;

    auto warnings = log.lines("warning", r.path.string());
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find(c.reason), std::string::npos) << warnings[0];
}

INSTANTIATE_TEST_SUITE_P(
    Loader, BrokenPlugin,
    ::testing::Values(
        BrokenCase{"no_entry", "noentry", KEEL_STATUS_NOT_FOUND, "no entry symbol 'keel_plugin_init'"},
        BrokenCase{"wrong_major", "wrongmajor", KEEL_STATUS_VERSION_MISMATCH,
                   "plugin implements ABI " + std::to_string(KEEL_ABI_VERSION_MAJOR + 1) + "." +
                       std::to_string(KEEL_ABI_VERSION_MINOR) + ", this runtime implements ABI " +
                       std::to_string(KEEL_ABI_VERSION_MAJOR) + "." + std::to_string(KEEL_ABI_VERSION_MINOR)},
        BrokenCase{"init_fails", "initfail", KEEL_STATUS_UNAVAILABLE,
                   "keel_plugin_init failed: [initfail keel_plugin_init] simulated initialisation failure"},
        BrokenCase{"missing_required", "norequired", KEEL_STATUS_UNIMPLEMENTED,
                   "required entry 'device_free' is null"},
        BrokenCase{"duplicate", "fake", KEEL_STATUS_FAILED_PRECONDITION,
                   "duplicate device type 'fake': already provided by " +
                       fs::weakly_canonical(fake_file("good", "fake")).string()},
        BrokenCase{"junk", "junk", KEEL_STATUS_INVALID_ARGUMENT, "is not a loadable shared library: not an ELF file"},
        BrokenCase{"type_mismatch", "mismatch", KEEL_STATUS_INVALID_ARGUMENT,
                   "reports device type 'other' but the file is named libkeel_mismatch.so"}),
    [](const ::testing::TestParamInfo<BrokenCase>& info) { return info.param.dir; });

TEST(Loader, APluginKnobThatDoesNotParseRejectsThePluginNamingTheVariable) {
    ScopedEnv knob("KEEL_FAKE_INLINE", "sometimes");
    auto rt = Runtime::create(only({fake_dir("good")}));
    ASSERT_TRUE(rt.ok());
    ASSERT_EQ(rt->rejected_plugins().size(), 1u);
    const RejectedPlugin& r = rt->rejected_plugins()[0];
    EXPECT_EQ(r.status, KEEL_STATUS_INVALID_ARGUMENT) << status_name(r.status) << ": " << r.reason;
    EXPECT_NE(r.reason.find("KEEL_FAKE_INLINE='sometimes': expected 1|0|on|off"), std::string::npos) << r.reason;
}

TEST(Loader, NotALibraryReasonNamesTheFileAndWhatIsWrong) {
    auto rt = Runtime::create(only({fake_dir("junk")}));
    ASSERT_TRUE(rt.ok());
    ASSERT_EQ(rt->rejected_plugins().size(), 1u);
    const std::string& reason = rt->rejected_plugins()[0].reason;
    // Checked before the system loader sees it: the file and what is wrong with it.
    EXPECT_NE(reason.find("libkeel_junk.so is not a loadable shared library: not an ELF file"), std::string::npos)
        << reason;
}

TEST(Loader, AllBrokenPluginsTogetherLeaveOnlyTheGoodOneLoaded) {
    RuntimeOptions o = only({fake_dir("good")});
    for (const char* d : {"no_entry", "wrong_major", "init_fails", "missing_required", "old_minor",
                          "duplicate", "junk", "type_mismatch"})
        o.plugin_path.push_back(fake_dir(d));
    auto rt = Runtime::create(o);
    ASSERT_TRUE(rt.ok());
    // old_minor is not broken: it loads as type "oldfake".
    ASSERT_EQ(rt->plugins().size(), 2u);
    EXPECT_EQ(rt->plugins()[0].type, "fake");
    EXPECT_EQ(rt->plugins()[1].type, "oldfake");
    EXPECT_EQ(rt->rejected_plugins().size(), 7u);
    EXPECT_EQ(device_names(*rt),
              (std::vector<std::string>{"fake:0", "fake:1", "oldfake:0", "oldfake:1"}));
}

TEST(Loader, AFileWhoseNameIsNotLibkeelTypeSoIsRejectedWithoutLoadingIt) {
    fs::path dir = fs::temp_directory_path() / ("keel_loader_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    fs::path odd = dir / "keel_fake.so";
    fs::copy_file(fake_file("good", "fake"), odd, fs::copy_options::overwrite_existing);
    auto rt = Runtime::create(only({odd}));
    fs::remove_all(dir);
    ASSERT_TRUE(rt.ok());
    ASSERT_EQ(rt->rejected_plugins().size(), 1u);
    EXPECT_EQ(rt->rejected_plugins()[0].status, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(rt->rejected_plugins()[0].reason.find("does not follow libkeel_<type>.so"),
              std::string::npos)
        << rt->rejected_plugins()[0].reason;
    EXPECT_TRUE(rt->plugins().empty());
}

// ---- the search path ----------------------------------------------------------

TEST(Loader, KeelPluginPathDirectoryIsScanned) {
    ScopedEnv env("KEEL_PLUGIN_PATH", fake_dir("good").string());
    RuntimeOptions o;
    o.use_default_plugin_dirs = false;
    auto rt = Runtime::create(o);
    ASSERT_TRUE(rt.ok());
    ASSERT_EQ(rt->plugins().size(), 1u);
    EXPECT_EQ(rt->plugins()[0].type, "fake");
    ASSERT_EQ(rt->search_path().size(), 1u);
    EXPECT_EQ(rt->search_path()[0].origin, "KEEL_PLUGIN_PATH");
}

TEST(Loader, KeelPluginPathFileIsLoadedDirectly) {
    // The directory also holds nothing else of interest; the file itself is listed.
    ScopedEnv env("KEEL_PLUGIN_PATH", fake_file("old_minor", "oldfake").string());
    RuntimeOptions o;
    o.use_default_plugin_dirs = false;
    auto rt = Runtime::create(o);
    ASSERT_TRUE(rt.ok());
    ASSERT_EQ(rt->plugins().size(), 1u);
    EXPECT_EQ(rt->plugins()[0].type, "oldfake");
}

TEST(Loader, KeelPluginPathIsColonSeparatedSkipsEmptyEntriesAndWarnsAboutMissingOnes) {
    LogCapture log;
    ScopedEnv env("KEEL_PLUGIN_PATH", "::/nonexistent/keel/dir:" + fake_dir("good").string() + ":" +
                                          fake_dir("junk").string() + ":");
    RuntimeOptions o;
    o.use_default_plugin_dirs = false;
    auto rt = Runtime::create(o);
    ASSERT_TRUE(rt.ok());
    EXPECT_EQ(rt->plugins().size(), 1u);
    EXPECT_EQ(rt->rejected_plugins().size(), 1u);
    EXPECT_EQ(rt->search_path().size(), 3u);
    EXPECT_EQ(log.lines("warning", "/nonexistent/keel/dir").size(), 1u);
}

TEST(Loader, KeelPluginPathIsIgnoredWhenOptionsSaySo) {
    ScopedEnv env("KEEL_PLUGIN_PATH", fake_dir("good").string());
    auto rt = Runtime::create(only({}));
    ASSERT_TRUE(rt.ok());
    EXPECT_TRUE(rt->plugins().empty());
}

TEST(Loader, OptionsPathIsSearchedBeforeKeelPluginPath) {
    ScopedEnv env("KEEL_PLUGIN_PATH", fake_dir("good").string());
    RuntimeOptions o;
    o.plugin_path = {fake_dir("duplicate")};
    o.use_default_plugin_dirs = false;
    auto rt = Runtime::create(o);
    ASSERT_TRUE(rt.ok());
    ASSERT_EQ(rt->plugins().size(), 1u);
    EXPECT_EQ(rt->plugins()[0].version, "0.0.1-duplicate");
    ASSERT_EQ(rt->rejected_plugins().size(), 1u);
    EXPECT_EQ(rt->rejected_plugins()[0].status, KEEL_STATUS_FAILED_PRECONDITION);
}

TEST(Loader, TheSameFileListedTwiceLoadsOnceAndIsNotADuplicate) {
    auto rt = Runtime::create(only({fake_dir("good"), fake_file("good", "fake"), fake_dir("good")}));
    ASSERT_TRUE(rt.ok());
    EXPECT_EQ(rt->plugins().size(), 1u);
    EXPECT_TRUE(rt->rejected_plugins().empty());
}

TEST(Loader, TheDefaultDirectoryIsKeelPluginsBesideTheRuntimeLibrary) {
    // Found from where libkeel_runtime.so is at run time (here the build
    // tree's <libdir>, which mirrors the install), never compiled in.
    auto dirs = Runtime::default_plugin_dirs();
    ASSERT_EQ(dirs.size(), 1u);
    EXPECT_EQ(dirs[0].origin, "beside the runtime");
    EXPECT_EQ(dirs[0].path, std::filesystem::canonical(KEEL_BUILD_PLUGIN_DIR)) << dirs[0].path;
    RuntimeOptions o;
    o.use_env_plugin_path = false;
    auto rt = Runtime::create(o);
    ASSERT_TRUE(rt.ok());
    ASSERT_EQ(rt->search_path().size(), 1u);
    EXPECT_EQ(rt->search_path()[0].path, dirs[0].path);
}

TEST(Loader, AMovedFromRuntimeHasNoDevicesAndSaysSo) {
    auto rt = Runtime::create(only({fake_dir("good")}));
    ASSERT_TRUE(rt.ok());
    Runtime moved = std::move(rt).value();
    EXPECT_EQ(moved.devices().size(), 2u);
    Runtime& empty = rt.value();  // NOLINT: inspecting the moved-from state on purpose
    EXPECT_TRUE(empty.devices().empty());
    EXPECT_TRUE(empty.plugins().empty());
    EXPECT_FALSE(empty.device("fake:0").ok());
}

}  // namespace
}  // namespace keel::test
