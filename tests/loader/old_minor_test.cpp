// A plugin with a shorter table (as built against an older minor) loads; its
// required entries work and every optional entry it lacks reports
// UNIMPLEMENTED through the C++ API. The entries beyond its struct_size
// abort if called, so these tests also prove they are never read.
#include "test_support.hpp"

#include <keel/keel.hpp>

#include <gtest/gtest.h>

#include <numeric>
#include <span>
#include <vector>

namespace keel::test {
namespace {

class OldMinor : public ::testing::Test {
protected:
    void SetUp() override {
        auto rt = Runtime::create(only({fake_dir("old_minor")}));
        ASSERT_TRUE(rt.ok());
        runtime_.emplace(std::move(rt).value());
        ASSERT_EQ(runtime_->plugins().size(), 1u) << (runtime_->rejected_plugins().empty()
                                                          ? ""
                                                          : runtime_->rejected_plugins()[0].reason);
    }
    const Device& device() const { return runtime_->devices().at(0); }

    static void expect_unimplemented(const Error& e, const char* entry) {
        EXPECT_EQ(e.code(), KEEL_STATUS_UNIMPLEMENTED) << e.message();
        EXPECT_NE(e.message().find(std::string("optional entry '") + entry + "'"), std::string::npos)
            << e.message();
    }

    std::optional<Runtime> runtime_;
};

TEST_F(OldMinor, LoadsWithItsShorterTableReported) {
    const PluginInfo& p = runtime_->plugins()[0];
    EXPECT_EQ(p.type, "oldfake");
    EXPECT_EQ(p.table_size, KEEL_API_ENTRY_END(memset_d8));
    EXPECT_LT(p.table_size, KEEL_PLUGIN_API_STRUCT_SIZE);
}

TEST_F(OldMinor, MemoryInfoIsUnimplemented) {
    auto info = device().memory_info();
    ASSERT_FALSE(info.ok());
    expect_unimplemented(info.error(), "device_memory_info");
}

TEST_F(OldMinor, KernelLookupIsUnimplemented) {
    auto k = Kernel::find(device(), "fill");
    ASSERT_FALSE(k.ok());
    expect_unimplemented(k.error(), "kernel_get");
}

TEST_F(OldMinor, ElapsedTimeIsUnimplemented) {
    auto stream = Stream::create(device());
    auto a = Event::create(device(), EventTiming::on);
    auto b = Event::create(device(), EventTiming::on);
    ASSERT_TRUE(stream.ok() && a.ok() && b.ok());
    ASSERT_TRUE(a->record(*stream).ok());
    ASSERT_TRUE(b->record(*stream).ok());
    ASSERT_TRUE(b->synchronize().ok());
    auto ms = Event::elapsed_ms(*a, *b);
    ASSERT_FALSE(ms.ok());
    expect_unimplemented(ms.error(), "event_elapsed_time");
}

TEST_F(OldMinor, TinyCopiesAreStagedWithoutTheInlineEntryOrHostAlloc) {
    // No memcpy_h2d_inline and no host_alloc (their slots abort if called):
    // a scalar goes through staging in ordinary host memory.
    auto memory = MemoryPool::create(device());
    ASSERT_TRUE(memory.ok());
    auto stream = Stream::create(*memory);
    ASSERT_TRUE(stream.ok());
    auto buf = Buffer::allocate(*stream, 8);
    ASSERT_TRUE(buf.ok());
    const std::uint64_t value = 7;
    ASSERT_TRUE(stream->copy(*buf, std::span(&value, 1)).ok());
    auto back = stream->copy_to_vector<std::uint64_t>(*buf);
    ASSERT_TRUE(back.ok());
    auto got = std::move(*back).get();
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, std::vector<std::uint64_t>{7});
    EXPECT_EQ(memory->staging_stats().inline_copies, 0u);
    EXPECT_GT(memory->staging_stats().host_allocations, 0u);
}

TEST_F(OldMinor, PinnedBufferFallsBackToPageableMemoryAndCopiesStillRoundTrip) {
    auto pinned_in = PinnedBuffer::allocate(device(), 1000);
    auto pinned_out = PinnedBuffer::allocate(device(), 1000);
    ASSERT_TRUE(pinned_in.ok() && pinned_out.ok());
    EXPECT_FALSE(pinned_in->is_pinned());
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pinned_in->data()) % 4096, 0u);
    auto bytes = pinned_in->as<std::uint8_t>();
    std::iota(bytes.begin(), bytes.end(), std::uint8_t{1});

    auto stream = Stream::create(device());
    ASSERT_TRUE(stream.ok());
    auto buf = Buffer::allocate(*stream, 1000);
    ASSERT_TRUE(buf.ok());
    ASSERT_TRUE(stream->copy(*buf, *pinned_in).ok());
    ASSERT_TRUE(stream->copy(*pinned_out, *buf).ok());
    ASSERT_TRUE(stream->synchronize().ok());
    auto out = pinned_out->as<std::uint8_t>();
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), out.begin()));
}

}  // namespace
}  // namespace keel::test
