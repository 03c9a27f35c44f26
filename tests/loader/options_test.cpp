// Options given to plugins when they load (keel.h "Plugin options", ABI
// 1.6): they configure the CPU plugin without any environment variable,
// override its variables, and are never ignored: an unknown key or a bad
// value rejects the plugin with a message naming it, and so does a plugin
// of an older minor, which cannot see options.
#include "test_support.hpp"

#include <keel/keel.hpp>
#include <keel/testing/loaded_plugin.hpp>
#include <keel/testing/result.hpp>

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace keel::test {
namespace {

fs::path cpu_plugin() { return fs::path(KEEL_BUILD_PLUGIN_DIR) / "libkeel_cpu.so"; }

RuntimeOptions cpu_with(std::map<std::string, std::string> options) {
    RuntimeOptions o = only({cpu_plugin()});
    o.plugin_options["cpu"] = std::move(options);
    return o;
}

const PluginSetting* setting(const PluginInfo& p, const std::string& key) {
    for (const PluginSetting& s : p.settings)
        if (s.key == key) return &s;
    return nullptr;
}

std::string rejections(const Runtime& rt) {
    std::string out;
    for (const RejectedPlugin& r : rt.rejected_plugins()) out += r.path.string() + ": " + r.reason + "\n";
    return out;
}

TEST(PluginOptions, ConfigureTheCpuDeviceWithoutAnyEnvironmentVariable) {
    ScopedEnv env({{"KEEL_CPU_MEMORY_BYTES", std::nullopt}});
    KEEL_ASSERT_OK_AND_ASSIGN(Runtime rt, Runtime::create(cpu_with({{"memory_bytes", "64M"}})));
    ASSERT_EQ(rt.devices().size(), 1u) << rejections(rt);
    EXPECT_EQ(rt.devices()[0].properties().total_memory, 64ull << 20);
    const PluginSetting* s = setting(rt.plugins().at(0), "memory_bytes");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->value, "64M");
    EXPECT_EQ(s->source, SettingSource::option);
    EXPECT_EQ(s->environment_variable, "KEEL_CPU_MEMORY_BYTES");
}

TEST(PluginOptions, AnOptionOverridesTheEnvironmentVariableWhichOverridesTheDefault) {
    ScopedEnv env("KEEL_CPU_MEMORY_BYTES", "32M");
    {
        KEEL_ASSERT_OK_AND_ASSIGN(Runtime rt, Runtime::create(cpu_with({{"memory_bytes", "64M"}})));
        ASSERT_EQ(rt.devices().size(), 1u) << rejections(rt);
        EXPECT_EQ(rt.devices()[0].properties().total_memory, 64ull << 20);
    }
    {
        KEEL_ASSERT_OK_AND_ASSIGN(Runtime rt, Runtime::create(only({cpu_plugin()})));
        ASSERT_EQ(rt.devices().size(), 1u) << rejections(rt);
        EXPECT_EQ(rt.devices()[0].properties().total_memory, 32ull << 20);
        const PluginSetting* s = setting(rt.plugins().at(0), "memory_bytes");
        ASSERT_NE(s, nullptr);
        EXPECT_EQ(s->source, SettingSource::environment);
        const PluginSetting* threads = setting(rt.plugins().at(0), "threads");
        ASSERT_NE(threads, nullptr);
        EXPECT_EQ(threads->source, SettingSource::plugin_default);
    }
}

TEST(PluginOptions, TurnOnTheCpuFaultInjectionWithoutAnyEnvironmentVariable) {
    ScopedEnv env({{"KEEL_CPU_FAIL_ALLOC_AFTER", std::nullopt}});
    {
        KEEL_ASSERT_OK_AND_ASSIGN(Runtime rt, Runtime::create(cpu_with({{"fail_alloc_after", "0"}})));
        ASSERT_EQ(rt.devices().size(), 1u) << rejections(rt);
        auto refused = RawBuffer::allocate(rt.devices()[0], 64);
        EXPECT_FALSE(refused.ok()) << "fail_alloc_after=0 given as an option did not fail the first allocation";
    }
    KEEL_ASSERT_OK_AND_ASSIGN(Runtime plain, Runtime::create(only({cpu_plugin()})));
    ASSERT_EQ(plain.devices().size(), 1u) << rejections(plain);
    KEEL_EXPECT_OK(RawBuffer::allocate(plain.devices()[0], 64));
}

TEST(PluginOptions, AnUnknownKeyRejectsThePluginNamingTheKeyAndTheKeysItTakes) {
    KEEL_ASSERT_OK_AND_ASSIGN(Runtime rt, Runtime::create(cpu_with({{"memory_byte", "64M"}})));
    EXPECT_TRUE(rt.devices().empty());
    ASSERT_EQ(rt.rejected_plugins().size(), 1u);
    const RejectedPlugin& r = rt.rejected_plugins()[0];
    EXPECT_EQ(r.status, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(r.reason.find("unknown option 'memory_byte'"), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("memory_bytes"), std::string::npos) << r.reason;
    // The error a framework sees when it asks for the device says why.
    auto d = rt.device("cpu:0");
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.error().message().find("unknown option 'memory_byte'"), std::string::npos) << d.error().message();
}

TEST(PluginOptions, AValueThePluginDoesNotAcceptRejectsItNamingTheOption) {
    KEEL_ASSERT_OK_AND_ASSIGN(Runtime rt, Runtime::create(cpu_with({{"memory_bytes", "lots"}})));
    ASSERT_EQ(rt.rejected_plugins().size(), 1u);
    const RejectedPlugin& r = rt.rejected_plugins()[0];
    EXPECT_EQ(r.status, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(r.reason.find("option 'memory_bytes'='lots': expected"), std::string::npos) << r.reason;
}

TEST(PluginOptions, APluginOfAnOlderMinorGivenOptionsIsShutDownAndRejected) {
    RuntimeOptions o = only({fake_dir("minimum_1_5")});
    o.plugin_options["min15"] = {{"anything", "1"}};
    {
        KEEL_ASSERT_OK_AND_ASSIGN(Runtime rt, Runtime::create(o));
        EXPECT_TRUE(rt.devices().empty());
        ASSERT_EQ(rt.rejected_plugins().size(), 1u);
        const RejectedPlugin& r = rt.rejected_plugins()[0];
        EXPECT_EQ(r.status, KEEL_STATUS_FAILED_PRECONDITION);
        EXPECT_NE(r.reason.find("options anything=1"), std::string::npos) << r.reason;
        EXPECT_NE(r.reason.find("declares ABI 1.5, which cannot take options"), std::string::npos) << r.reason;
    }
    // Without options it loads as it always did (and was shut down above:
    // it initialises afresh).
    KEEL_ASSERT_OK_AND_ASSIGN(Runtime rt, Runtime::create(only({fake_dir("minimum_1_5")})));
    EXPECT_EQ(rt.plugins().size(), 1u) << rejections(rt);
    EXPECT_TRUE(rt.plugins().at(0).settings.empty());
}

TEST(PluginOptions, ARuntimeAskingForOtherOptionsOfAPluginLoadedWithSomeIsRefusedIt) {
    KEEL_ASSERT_OK_AND_ASSIGN(Runtime first, Runtime::create(cpu_with({{"memory_bytes", "64M"}})));
    ASSERT_EQ(first.devices().size(), 1u) << rejections(first);
    KEEL_ASSERT_OK_AND_ASSIGN(Runtime other, Runtime::create(cpu_with({{"memory_bytes", "32M"}})));
    ASSERT_EQ(other.rejected_plugins().size(), 1u);
    EXPECT_EQ(other.rejected_plugins()[0].status, KEEL_STATUS_FAILED_PRECONDITION);
    EXPECT_NE(other.rejected_plugins()[0].reason.find("already loaded in this process with options memory_bytes=64M"),
              std::string::npos)
        << other.rejected_plugins()[0].reason;
    KEEL_ASSERT_OK_AND_ASSIGN(Runtime same, Runtime::create(cpu_with({{"memory_bytes", "64M"}})));
    ASSERT_EQ(same.devices().size(), 1u) << rejections(same);
    EXPECT_EQ(same.devices()[0].properties().total_memory, 64ull << 20);
}

TEST(PluginOptions, OptionsForATypeNoPluginProvidesAreLoggedAndNotFatal) {
    LogCapture log;
    RuntimeOptions o = only({cpu_plugin()});
    o.plugin_options["no_such_device"] = {{"x", "1"}};
    KEEL_ASSERT_OK_AND_ASSIGN(Runtime rt, Runtime::create(o));
    EXPECT_EQ(rt.devices().size(), 1u) << rejections(rt);
    EXPECT_EQ(log.lines("warning", "options given for plugin type 'no_such_device'").size(), 1u);
}

TEST(PluginOptions, AMalformedTypeOrKeyIsAnErrorOfCreate) {
    RuntimeOptions bad_key = only({cpu_plugin()});
    bad_key.plugin_options["cpu"] = {{"Memory-Bytes", "1G"}};
    KEEL_EXPECT_ERROR(Runtime::create(bad_key), KEEL_STATUS_INVALID_ARGUMENT);
    RuntimeOptions bad_type = only({cpu_plugin()});
    bad_type.plugin_options["CPU"] = {{"memory_bytes", "1G"}};
    KEEL_EXPECT_ERROR(Runtime::create(bad_type), KEEL_STATUS_INVALID_ARGUMENT);
}

// A runtime of 1.5 passes a shorter keel_host_services: a 1.6 plugin reads
// no options past it and still logs through it.
TEST(PluginOptions, APluginOf1_6UnderARuntimeOf1_5ReadsNoOptionsAndStillLogs) {
    ScopedEnv env("KEEL_CPU_CHECK", "1");
    auto library = keel::testing::PluginLibrary::open(cpu_plugin().string());
    ASSERT_TRUE(library.ok()) << library.error().message();
    keel::testing::CapturedLog log;
    keel_host_services host = log.services(KEEL_ABI_VERSION_MAJOR, 5);
    host.struct_size = KEEL_HOST_SERVICES_STRUCT_SIZE_1_0;
    // Beyond the struct: what a 1.5 runtime never wrote must not be read.
    const keel_option garbage{sizeof(keel_option), "no_such_key", "1"};
    host.options = &garbage;
    host.option_count = 1;
    host.option_stride = sizeof garbage;
    const keel_plugin_api* table = nullptr;
    keel_error* error = library->entry()(&host, &table);
    ASSERT_EQ(error, nullptr) << error->message;
    ASSERT_NE(table, nullptr);
    bool logged = false;
    for (const auto& line : log.lines()) logged = logged || line.message.find("checker mode on") != std::string::npos;
    EXPECT_TRUE(logged) << "the plugin's log was dropped for a shorter keel_host_services";
    table->plugin_shutdown();
}

}  // namespace
}  // namespace keel::test
