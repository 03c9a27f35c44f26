// PluginApi over hand-made tables: validation names the problem, entries
// beyond struct_size are never called, absent optional entries answer
// UNIMPLEMENTED, and plugin errors pass through.
#include "plugin_api.hpp"

#include <keel/c_error.hpp>

#include <gtest/gtest.h>

#include <cstring>

namespace keel::detail {
namespace {

keel_error* ok_info(keel_plugin_info*) { return nullptr; }
void no_shutdown() {}
keel_error* count_two(std::uint32_t* out) {
    *out = 2;
    return nullptr;
}
template <class... A>
keel_error* ok_entry(A...) {
    return nullptr;
}
template <class... A>
keel_error* must_not_be_called(A...) {
    ADD_FAILURE() << "an entry beyond struct_size was called";
    return nullptr;
}
keel_error* fails_alloc(keel_device, std::uint64_t, keel_device_addr*) {
    return keel::make_c_error(KEEL_STATUS_OUT_OF_MEMORY, "[t device_alloc] full");
}

keel_plugin_api full_table() {
    keel_plugin_api t{};
    t.struct_size = KEEL_PLUGIN_API_STRUCT_SIZE;
    t.abi_major = KEEL_ABI_VERSION_MAJOR;
    t.abi_minor = KEEL_ABI_VERSION_MINOR;
    t.plugin_info = &ok_info;
    t.plugin_shutdown = &no_shutdown;
    t.device_count = &count_two;
    t.device_get = &ok_entry<std::uint32_t, keel_device*>;
    t.device_properties = &ok_entry<keel_device, keel_device_properties*>;
    t.stream_create = &ok_entry<keel_device, std::uint32_t, keel_stream*>;
    t.stream_destroy = &ok_entry<keel_stream>;
    t.stream_synchronize = &ok_entry<keel_stream>;
    t.stream_query = &ok_entry<keel_stream, std::int32_t*>;
    t.stream_wait_event = &ok_entry<keel_stream, keel_event>;
    t.stream_enqueue_host_func = &ok_entry<keel_stream, keel_host_fn, void*>;
    t.event_create = &ok_entry<keel_device, std::uint32_t, keel_event*>;
    t.event_destroy = &ok_entry<keel_event>;
    t.event_record = &ok_entry<keel_event, keel_stream>;
    t.event_query = &ok_entry<keel_event, std::int32_t*>;
    t.event_synchronize = &ok_entry<keel_event>;
    t.device_alloc = &fails_alloc;
    t.device_free = &ok_entry<keel_device, keel_device_addr>;
    t.memcpy_h2d = &ok_entry<keel_stream, keel_device_addr, const void*, std::uint64_t>;
    t.memcpy_d2h = &ok_entry<keel_stream, void*, keel_device_addr, std::uint64_t>;
    t.memcpy_d2d = &ok_entry<keel_stream, keel_device_addr, keel_device_addr, std::uint64_t>;
    t.memset_d8 = &ok_entry<keel_stream, keel_device_addr, std::uint8_t, std::uint64_t>;
    return t;
}

TEST(PluginApi, AFullTableWithOnlyRequiredEntriesValidates) {
    keel_plugin_api t = full_table();
    EXPECT_TRUE(PluginApi::validate(&t).ok());
}

TEST(PluginApi, ValidationNamesTheMissingRequiredEntry) {
    keel_plugin_api t = full_table();
    t.stream_query = nullptr;
    auto r = PluginApi::validate(&t);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_UNIMPLEMENTED);
    EXPECT_EQ(r.error().message(), "required entry 'stream_query' is null");
}

TEST(PluginApi, ValidationNamesTheFirstRequiredEntryBeyondATruncatedTable) {
    keel_plugin_api t = full_table();
    t.struct_size = KEEL_API_ENTRY_END(event_create);
    auto r = PluginApi::validate(&t);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("ends before required entry 'event_destroy'"), std::string::npos)
        << r.error().message();
}

TEST(PluginApi, ValidationRefusesAnotherMajorAndANullTable) {
    keel_plugin_api t = full_table();
    t.abi_major = KEEL_ABI_VERSION_MAJOR + 1;
    auto r = PluginApi::validate(&t);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_VERSION_MISMATCH);
    EXPECT_FALSE(PluginApi::validate(nullptr).ok());
}

TEST(PluginApi, ANewerMinorsLargerTableIsAccepted) {
    // A plugin of a later minor: more entries than this runtime knows.
    struct Newer {
        keel_plugin_api known;
        void* extra[4];
    } newer{full_table(), {}};
    newer.known.struct_size = sizeof(Newer);
    newer.known.abi_minor = KEEL_ABI_VERSION_MINOR + 3;
    EXPECT_TRUE(PluginApi::validate(&newer.known).ok());
    PluginApi api(newer.known, "t");
    EXPECT_EQ(api.table_size(), sizeof(Newer));
    std::uint32_t n = 0;
    EXPECT_TRUE(api.device_count(&n).ok());
    EXPECT_EQ(n, 2u);
}

TEST(PluginApi, OptionalEntriesBeyondStructSizeAreAbsentAndNeverCalled) {
    keel_plugin_api t = full_table();
    t.device_memory_info = &must_not_be_called<keel_device, std::uint64_t*, std::uint64_t*>;
    t.kernel_get = &must_not_be_called<keel_device, const char*, keel_kernel*>;
    t.struct_size = KEEL_API_ENTRY_END(memset_d8);
    PluginApi api(t, "old");
    std::uint64_t f = 0, total = 0;
    auto r = api.device_memory_info(nullptr, &f, &total);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_UNIMPLEMENTED);
    EXPECT_NE(r.error().message().find("[old device_memory_info]"), std::string::npos) << r.error().message();
    keel_kernel k = nullptr;
    EXPECT_EQ(api.kernel_get(nullptr, "fill", &k).error().code(), KEEL_STATUS_UNIMPLEMENTED);
    EXPECT_FALSE(api.has_host_alloc());
}

TEST(PluginApi, NullOptionalEntriesInsideTheTableAreAbsent) {
    keel_plugin_api t = full_table();  // full size, optional entries null
    PluginApi api(t, "t");
    float ms = 0;
    EXPECT_EQ(api.event_elapsed_time(nullptr, nullptr, &ms).error().code(), KEEL_STATUS_UNIMPLEMENTED);
    EXPECT_EQ(api.memcpy_h2d_inline(nullptr, 0, nullptr, 0).error().code(), KEEL_STATUS_UNIMPLEMENTED);
}

TEST(PluginApi, HostAllocCountsAsPresentOnlyWithHostFree) {
    keel_plugin_api t = full_table();
    t.host_alloc = &ok_entry<keel_device, std::uint64_t, void**>;
    EXPECT_FALSE(PluginApi(t, "t").has_host_alloc());
    t.host_free = &ok_entry<keel_device, void*>;
    EXPECT_TRUE(PluginApi(t, "t").has_host_alloc());
}

TEST(PluginApi, PluginErrorsPassThroughWithTheirCodeAndMessage) {
    keel_plugin_api t = full_table();
    PluginApi api(t, "t");
    keel_device_addr a = 0;
    auto r = api.device_alloc(nullptr, 10, &a);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_OUT_OF_MEMORY);
    EXPECT_EQ(r.error().message(), "[t device_alloc] full");
}

}  // namespace
}  // namespace keel::detail
