// Device memory, pinned memory and copies.
#include "cpu_test.hpp"

#include <keel/base/resident.hpp>

#include <cstring>
#include <numeric>

namespace keel::cpu::testing {
namespace {

class CpuMemory : public CpuPluginTest {};

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
    return v;
}

TEST_F(CpuMemory, CopiesRoundTripHostToDeviceToDeviceToHost) {
    keel_stream s = stream();
    for (size_t n : {size_t{1}, size_t{255}, size_t{4096}, size_t{1} << 20, size_t{9} << 20}) {
        auto src = pattern(n, static_cast<uint8_t>(n));
        std::vector<uint8_t> back(n, 0);
        keel_device_addr a = alloc(n);
        keel_device_addr b = alloc(n);
        KEEL_ASSERT_OK(api().memcpy_h2d(s, a, src.data(), n));
        KEEL_ASSERT_OK(api().memcpy_d2d(s, b, a, n));
        KEEL_ASSERT_OK(api().memcpy_d2h(s, back.data(), b, n));
        KEEL_ASSERT_OK(api().stream_synchronize(s));
        EXPECT_EQ(back, src) << n << " bytes";
    }
}

TEST_F(CpuMemory, CopiesWorkAtOffsetsInsideAnAllocationAndThroughPinnedMemory) {
    keel_stream s = stream();
    keel_device_addr a = alloc(1024);
    auto* host = static_cast<uint8_t*>(pinned(1024));
    for (int i = 0; i < 1024; ++i) host[i] = static_cast<uint8_t>(i);
    KEEL_ASSERT_OK(api().memset_d8(s, a, 0, 1024));
    KEEL_ASSERT_OK(api().memcpy_h2d(s, a + 100, host + 10, 50));
    std::vector<uint8_t> back(1024);
    KEEL_ASSERT_OK(api().memcpy_d2h(s, back.data(), a, 1024));
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    for (int i = 0; i < 1024; ++i) {
        uint8_t want = (i >= 100 && i < 150) ? static_cast<uint8_t>(i - 90) : 0;
        ASSERT_EQ(back[i], want) << "byte " << i;
    }
}

TEST_F(CpuMemory, MemsetFillsExactlyTheRange) {
    keel_stream s = stream();
    keel_device_addr a = alloc(300);
    KEEL_ASSERT_OK(api().memset_d8(s, a, 0x11, 300));
    KEEL_ASSERT_OK(api().memset_d8(s, a + 1, 0xEE, 298));
    std::vector<uint8_t> back(300);
    KEEL_ASSERT_OK(api().memcpy_d2h(s, back.data(), a, 300));
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    EXPECT_EQ(back.front(), 0x11);
    EXPECT_EQ(back.back(), 0x11);
    for (int i = 1; i < 299; ++i) ASSERT_EQ(back[i], 0xEE);
}

TEST_F(CpuMemory, HostSourceIsReadWhenTheCopyExecutesNotAtEnqueue) {
    keel_stream s = stream();
    keel_device_addr a = alloc(4);
    uint32_t src = 1;
    auto gate = block(s);
    KEEL_ASSERT_OK(api().memcpy_h2d(s, a, &src, 4));
    src = 2;  // allowed to matter: the copy has not executed yet
    gate->open();
    uint32_t back = 0;
    KEEL_ASSERT_OK(api().memcpy_d2h(s, &back, a, 4));
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    EXPECT_EQ(back, 2u);
}

TEST_F(CpuMemory, HostDestinationIsWrittenWhenTheCopyExecutes) {
    keel_stream s = stream();
    keel_device_addr a = alloc(4);
    uint32_t v = 42;
    KEEL_ASSERT_OK(api().memcpy_h2d(s, a, &v, 4));
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    uint32_t dst = 7;
    auto gate = block(s);
    KEEL_ASSERT_OK(api().memcpy_d2h(s, &dst, a, 4));
    EXPECT_EQ(dst, 7u);
    gate->open();
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    EXPECT_EQ(dst, 42u);
}

TEST_F(CpuMemory, InlineCopiesCaptureTheirSourceAtEnqueue) {
    keel_stream s = stream();
    keel_device_addr a = alloc(256);
    std::vector<uint8_t> src = pattern(256, 3);
    auto gate = block(s);
    KEEL_ASSERT_OK(api().memcpy_h2d_inline(s, a, src.data(), 256));
    std::fill(src.begin(), src.end(), 0);  // the caller may reuse it at once
    gate->open();
    std::vector<uint8_t> back(256);
    KEEL_ASSERT_OK(api().memcpy_d2h(s, back.data(), a, 256));
    KEEL_ASSERT_OK(api().stream_synchronize(s));
    EXPECT_EQ(back, pattern(256, 3));
    auto e = take(api().memcpy_h2d_inline(s, a, src.data(), KEEL_INLINE_COPY_MAX + 1));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_INVALID_ARGUMENT);
}

TEST_F(CpuMemory, OverlappingDeviceToDeviceCopiesAreRejectedAtEnqueue) {
    keel_stream s = stream();
    keel_device_addr a = alloc(1024);
    auto e = take(api().memcpy_d2d(s, a + 10, a, 100));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(e->message.find("overlap"), std::string::npos) << e->message;
}

TEST_F(CpuMemory, AllocationsAreAlignedAndDistinct) {
    std::vector<keel_device_addr> addrs;
    for (uint64_t n : {1, 255, 256, 257, 100000}) addrs.push_back(alloc(n));
    for (keel_device_addr a : addrs) EXPECT_EQ(a % 256, 0u);
    std::sort(addrs.begin(), addrs.end());
    EXPECT_EQ(std::adjacent_find(addrs.begin(), addrs.end()), addrs.end());
}

TEST_F(CpuMemory, AnAllocationLargerThanFreeMemoryFailsWithOutOfMemory) {
    keel_device_addr a = 0;
    auto e = take(api().device_alloc(dev(), (4ull << 30) + 1, &a));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_OUT_OF_MEMORY);
    EXPECT_NE(e->message.find("free"), std::string::npos) << e->message;
    EXPECT_EQ(e->message.rfind("[cpu device_alloc]", 0), 0u) << e->message;
    EXPECT_EQ(a, 0u) << "output written on failure";
}

TEST_F(CpuMemory, FreeingSomethingThatIsNotAnAllocationFails) {
    keel_device_addr a = alloc(512);
    for (keel_device_addr bad : {keel_device_addr{0x1234}, a + 256, keel_device_addr{0}}) {
        auto e = take(api().device_free(dev(), bad));
        ASSERT_TRUE(e) << bad;
        EXPECT_EQ(e->code, KEEL_STATUS_INVALID_ARGUMENT);
    }
    KEEL_ASSERT_OK(api().device_free(dev(), a));
    forget_allocation(a);
    auto e = take(api().device_free(dev(), a));
    ASSERT_TRUE(e) << "double free";
    void* p = nullptr;
    e = take(api().host_free(dev(), &p));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_INVALID_ARGUMENT);
}

TEST_F(CpuMemory, PinnedMemoryWhoseRoundedSizeWouldWrapIsOutOfMemory) {
    // Rounding such a size up to a page wraps to a few bytes: it must fail,
    // not hand out a tiny block that claims 16 EiB.
    for (uint64_t size : {~uint64_t{0}, ~uint64_t{0} - 4000}) {
        void* p = nullptr;
        auto e = take(api().host_alloc(dev(), size, &p));
        ASSERT_TRUE(e) << size;
        EXPECT_EQ(e->code, KEEL_STATUS_OUT_OF_MEMORY) << e->message;
        EXPECT_EQ(p, nullptr) << "output written on failure";
    }
}

TEST_F(CpuMemory, PinnedMemoryIsPageAlignedAndUsable) {
    auto* p = static_cast<uint8_t*>(pinned(10000));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
    std::memset(p, 0x5A, 10000);
    EXPECT_EQ(p[9999], 0x5A);
}

TEST_F(CpuMemory, ACopyToAnAddressOutsideEveryAllocationFailsAtTheNextSynchronize) {
    keel_stream s = stream();
    keel_device_addr a = alloc(256);
    uint8_t buf[512] = {};
    KEEL_ASSERT_OK(api().memcpy_h2d(s, a, buf, 512));  // enqueue succeeds: checked at execution
    auto e = take(api().stream_synchronize(s));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, KEEL_STATUS_OUT_OF_RANGE);
    EXPECT_NE(e->message.find("memcpy_h2d"), std::string::npos) << e->message;
    EXPECT_NE(e->message.find("past the end"), std::string::npos) << e->message;
    EXPECT_NE(e->message.find("stream"), std::string::npos) << e->message;
}

using CpuMemoryDeathTest = CpuMemory;

TEST_F(CpuMemoryDeathTest, DereferencingADeviceAddressOnTheHostCrashes) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    keel_device_addr a = alloc(64);
    EXPECT_DEATH(
        {
            volatile const int* p = reinterpret_cast<volatile const int*>(a);
            int v = *p;
            std::printf("read %d\n", v);
        },
        "");
}

// Large device and pinned memory goes back to the OS when freed. From
// malloc it would not: once a freed mapped block raised glibc's mmap
// threshold, smaller ones came from an arena, which kept them after their
// free.
TEST_F(CpuMemory, FreedLargeDeviceAndPinnedMemoryGoesBackToTheOs) {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "under ASan the plugin's storage comes from the sanitizer's allocator";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    GTEST_SKIP() << "under ASan the plugin's storage comes from the sanitizer's allocator";
#endif
#endif
    constexpr std::uint64_t kBytes = 16ull << 20;
    keel_stream s = stream();
    const std::uint64_t before = keel::resident_bytes();
    keel_device_addr larger = alloc(28ull << 20);  // freed first: it raised glibc's threshold above kBytes
    forget_allocation(larger);
    KEEL_ASSERT_OK(api().device_free(dev(), larger));
    for (int round = 0; round < 3; ++round) {
        keel_device_addr a = alloc(kBytes);
        KEEL_ASSERT_OK(api().memset_d8(s, a, 1, kBytes));
        KEEL_ASSERT_OK(api().stream_synchronize(s));
        forget_allocation(a);
        KEEL_ASSERT_OK(api().device_free(dev(), a));
        void* p = nullptr;
        KEEL_ASSERT_OK(api().host_alloc(dev(), kBytes, &p));
        std::memset(p, 2, kBytes);
        KEEL_ASSERT_OK(api().host_free(dev(), p));
        const std::uint64_t rss = keel::resident_bytes();
        EXPECT_LT(rss, before + kBytes / 2) << "round " << round << ": " << rss << " bytes resident after freeing, "
                                            << before << " before the first";
    }
}

}  // namespace
}  // namespace keel::cpu::testing
