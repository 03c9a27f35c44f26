// Native handles (ABI 1.1): a plugin that has them answers with its kind
// and value through Device/Stream::native_handle; a plugin built against
// 1.0 (a table that ends before them) and one that leaves them null answer
// UNIMPLEMENTED; a plugin of a newer minor with extra entries loads and its
// extras are never called.
#include "test_support.hpp"

#include <keel/keel.hpp>

#include <gtest/gtest.h>

namespace keel::test {
namespace {

constexpr auto kFakeKind = static_cast<keel_native_handle_kind>(KEEL_NATIVE_HANDLE_PLUGIN_DEFINED + 7);

TEST(NativeHandle, APluginWithTheEntriesAnswersWithItsKindAndValue) {
    auto rt = Runtime::create(only({fake_dir("good")}));
    ASSERT_TRUE(rt.ok());
    const Device& device = rt->devices().at(1);
    auto handle = device.native_handle();
    ASSERT_TRUE(handle.ok()) << handle.error().message();
    EXPECT_EQ(handle->kind, kFakeKind);
    EXPECT_EQ(handle->as<int>(), 1001);  // the fake's "driver device" is 1000 + index

    auto a = Stream::create(device);
    auto b = Stream::create(device);
    ASSERT_TRUE(a.ok() && b.ok());
    auto ha = a->native_handle();
    auto hb = b->native_handle();
    ASSERT_TRUE(ha.ok() && hb.ok());
    EXPECT_EQ(ha->kind, kFakeKind);
    EXPECT_NE(ha->as<void*>(), nullptr);
    EXPECT_NE(ha->value, hb->value) << "each stream has its own queue";
    EXPECT_EQ(a->native_handle()->value, ha->value) << "stable for the stream's life";
}

TEST(NativeHandle, AClosedStreamHasNone) {
    auto rt = Runtime::create(only({fake_dir("good")}));
    ASSERT_TRUE(rt.ok());
    auto s = Stream::create(rt->devices().at(0));
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(s->close().ok());
    auto h = s->native_handle();
    ASSERT_FALSE(h.ok());
    EXPECT_EQ(h.error().code(), KEEL_STATUS_INVALID_ARGUMENT) << h.error().message();
}

TEST(NativeHandle, APluginBuiltAgainstMinor0AnswersUnimplemented) {
    auto rt = Runtime::create(only({fake_dir("old_minor")}));
    ASSERT_TRUE(rt.ok());
    ASSERT_EQ(rt->plugins().at(0).abi_minor, 0u);
    const Device& device = rt->devices().at(0);
    auto d = device.native_handle();
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().code(), KEEL_STATUS_UNIMPLEMENTED) << d.error().message();
    EXPECT_NE(d.error().message().find("device_native_handle"), std::string::npos) << d.error().message();
    auto s = Stream::create(device);
    ASSERT_TRUE(s.ok());
    auto h = s->native_handle();
    ASSERT_FALSE(h.ok());
    EXPECT_EQ(h.error().code(), KEEL_STATUS_UNIMPLEMENTED) << h.error().message();
}

TEST(NativeHandle, APluginOfANewerMinorLoadsAndItsExtraEntriesAreNeverCalled) {
    auto rt = Runtime::create(only({fake_dir("newer_minor")}));
    ASSERT_TRUE(rt.ok());
    ASSERT_EQ(rt->plugins().size(), 1u) << rt->rejected_plugins().at(0).reason;
    const PluginInfo& p = rt->plugins()[0];
    EXPECT_EQ(p.abi_minor, KEEL_ABI_VERSION_MINOR + 1);
    EXPECT_GT(p.table_size, KEEL_PLUGIN_API_STRUCT_SIZE);
    // Everything this runtime knows works, the 1.1 entries included.
    auto s = Stream::create(rt->devices().at(0));
    ASSERT_TRUE(s.ok());
    EXPECT_TRUE(s->native_handle().ok());
    auto b = Buffer::allocate(*s, 64);
    ASSERT_TRUE(b.ok());
    EXPECT_TRUE(s->memset(*b, 1).ok());
    EXPECT_TRUE(s->synchronize().ok());
}

}  // namespace
}  // namespace keel::test
