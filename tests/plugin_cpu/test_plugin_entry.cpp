// The entry symbol, version negotiation, the table, plugin and device info.
#include "cpu_test.hpp"

#include <cstring>

namespace keel::cpu::testing {
namespace {

TEST(CpuPluginEntry, RefusesADifferentMajorNamingBothVersions) {
    LoadedPlugin p({}, KEEL_ABI_VERSION_MAJOR + 1);
    ASSERT_TRUE(p.init_error());
    EXPECT_EQ(p.init_error()->code, KEEL_STATUS_VERSION_MISMATCH);
    const std::string& m = p.init_error()->message;
    const std::string offered = std::to_string(KEEL_ABI_VERSION_MAJOR + 1) + ".";
    const std::string implemented =
        std::to_string(KEEL_ABI_VERSION_MAJOR) + "." + std::to_string(KEEL_ABI_VERSION_MINOR);
    EXPECT_NE(m.find(offered), std::string::npos) << m;
    EXPECT_NE(m.find(implemented), std::string::npos) << m;
    EXPECT_EQ(m.rfind("[cpu keel_plugin_init]", 0), 0u) << m;
}

TEST(CpuPluginEntry, RejectsAMalformedConfigurationNamingTheVariable) {
    LoadedPlugin p(ScopedEnv::Vars{{"KEEL_CPU_SPIN_US", "fast"}});
    ASSERT_TRUE(p.init_error());
    EXPECT_EQ(p.init_error()->code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(p.init_error()->message.find("KEEL_CPU_SPIN_US"), std::string::npos);
}

TEST(CpuPluginEntry, CanBeInitialisedAgainAfterShutdown) {
    for (int i = 0; i < 2; ++i) {
        LoadedPlugin p;
        ASSERT_FALSE(p.init_error()) << p.init_error()->message;
        keel_plugin_info info{};
        info.struct_size = sizeof info;
        KEEL_ASSERT_OK(p.api().plugin_info(&info));
        EXPECT_STREQ(info.device_type, "cpu");
    }
}

class CpuPluginTable : public CpuPluginTest {};

TEST_F(CpuPluginTable, ImplementsEveryEntryOfThisVersion) {
    const keel_plugin_api& a = api();
    EXPECT_EQ(a.abi_major, KEEL_ABI_VERSION_MAJOR);
    EXPECT_EQ(a.abi_minor, KEEL_ABI_VERSION_MINOR);
    EXPECT_EQ(a.struct_size, KEEL_PLUGIN_API_STRUCT_SIZE);
    // Every pointer of 1.0 after the header is set (required and optional
    // alike); 1.1's native handles are absent: a CPU has no driver object;
    // 1.2's pageable staging stats too: it copies pageable memory directly.
    const auto* entries = reinterpret_cast<void* const*>(reinterpret_cast<const char*>(&a) + 16);
    const size_t n = (KEEL_PLUGIN_API_STRUCT_SIZE_1_0 - 16) / sizeof(void*);
    for (size_t i = 0; i < n; ++i) EXPECT_NE(entries[i], nullptr) << "entry " << i;
    EXPECT_EQ(a.device_native_handle, nullptr);
    EXPECT_EQ(a.stream_native_handle, nullptr);
    EXPECT_EQ(a.device_pageable_staging_stats, nullptr);
}

TEST_F(CpuPluginTable, DescribesOneCpuDeviceThatIsNotHostAddressable) {
    uint32_t n = 0;
    KEEL_ASSERT_OK(api().device_count(&n));
    EXPECT_EQ(n, 1u);
    keel_device d = nullptr;
    auto e = take(api().device_get(1, &d));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_NOT_FOUND);

    keel_device_properties p{};
    p.struct_size = sizeof p;
    KEEL_ASSERT_OK(api().device_properties(dev(), &p));
    EXPECT_STREQ(p.vendor, "keel");
    EXPECT_GT(std::strlen(p.name), 0u);
    EXPECT_EQ(p.total_memory, 4ull << 30);
    EXPECT_EQ(p.alloc_alignment, 256u);
    EXPECT_GE(p.compute_units, 1u);
    EXPECT_TRUE(p.capabilities & KEEL_DEVICE_CAP_EVENT_TIMING);
    EXPECT_TRUE(p.capabilities & KEEL_DEVICE_CAP_CONCURRENT_STREAMS);
    EXPECT_TRUE(p.capabilities & KEEL_DEVICE_CAP_PINNED_MEMORY);
    EXPECT_FALSE(p.capabilities & KEEL_DEVICE_CAP_HOST_ADDRESSABLE);
}

TEST_F(CpuPluginTable, WritesOnlyThePropertiesThatFitTheCallersStruct) {
    // A caller from an older minor knows fewer fields: bytes past its size stay untouched.
    struct {
        keel_device_properties p;
        char canary[8];
    } buf;
    std::memset(&buf, 0x7E, sizeof buf);
    buf.p.struct_size = offsetof(keel_device_properties, total_memory);
    KEEL_ASSERT_OK(api().device_properties(dev(), &buf.p));
    EXPECT_EQ(buf.p.struct_size, offsetof(keel_device_properties, total_memory));
    EXPECT_STREQ(buf.p.vendor, "keel");
    const auto* tail = reinterpret_cast<const unsigned char*>(&buf.p.total_memory);
    EXPECT_EQ(tail[0], 0x7E);
}

class CpuPluginSmallMemory : public CpuPluginTest {
    ScopedEnv::Vars environment() const override { return {{"KEEL_CPU_MEMORY_BYTES", "1M"}}; }
};

TEST_F(CpuPluginSmallMemory, TakesItsTotalMemoryFromTheEnvironmentAndReportsFreeMemory) {
    uint64_t free = 0, total = 0;
    KEEL_ASSERT_OK(api().device_memory_info(dev(), &free, &total));
    EXPECT_EQ(total, 1u << 20);
    EXPECT_EQ(free, total);
    keel_device_addr a = alloc(1000);  // rounded to 1024
    KEEL_ASSERT_OK(api().device_memory_info(dev(), &free, &total));
    EXPECT_EQ(free, total - 1024);
    KEEL_ASSERT_OK(api().device_free(dev(), a));
    forget_allocation(a);
    KEEL_ASSERT_OK(api().device_memory_info(dev(), &free, &total));
    EXPECT_EQ(free, total);
}

TEST(CpuPluginShutdown, ReportsAndReleasesWhatTheCallerLeaked) {
    LoadedPlugin p;
    ASSERT_FALSE(p.init_error());
    keel_device_addr a = 0;
    void* h = nullptr;
    keel_stream s = nullptr;
    keel_event e = nullptr;
    KEEL_ASSERT_OK(p.api().device_alloc(p.device(), 4096, &a));
    KEEL_ASSERT_OK(p.api().host_alloc(p.device(), 100, &h));
    KEEL_ASSERT_OK(p.api().stream_create(p.device(), 0, &s));
    KEEL_ASSERT_OK(p.api().event_create(p.device(), 0, &e));
    KEEL_ASSERT_OK(p.api().memset_d8(s, a, 1, 4096));
    p.shutdown();
    bool reported = false;
    for (const auto& log : p.logs()) {
        if (log.level == KEEL_LOG_WARN &&
            log.message.find("1 device allocations (4096 bytes), 1 pinned allocations (100 bytes), 1 streams, 1 "
                             "events") != std::string::npos)
            reported = true;
    }
    EXPECT_TRUE(reported);
}

TEST(CpuPluginShutdown, SaysNothingAtWarningLevelWhenEverythingWasReleased) {
    LoadedPlugin p;
    ASSERT_FALSE(p.init_error());
    keel_stream s = nullptr;
    KEEL_ASSERT_OK(p.api().stream_create(p.device(), 0, &s));
    KEEL_ASSERT_OK(p.api().stream_destroy(s));
    p.shutdown();
    for (const auto& log : p.logs()) EXPECT_LT(log.level, KEEL_LOG_WARN) << log.message;
}

}  // namespace
}  // namespace keel::cpu::testing
