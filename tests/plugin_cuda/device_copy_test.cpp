// Copies in every direction, memset, the inline copy, and range checks.
#include "cuda_plugin_fixture.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

namespace keel::cuda_test {
namespace {

using CudaCopy = CudaDeviceTest;

std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
    std::vector<unsigned char> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed) & 0xFF);
    return v;
}

TEST_F(CudaCopy, DataRoundTripsThroughEveryDirection) {
    constexpr std::size_t n = (3u << 20) + 5;  // not a multiple of anything convenient
    const std::vector<unsigned char> expected = pattern(n, 7);
    Stream stream(api(), device());
    DeviceBuffer a(api(), device(), n);
    DeviceBuffer b(api(), device(), n);
    PinnedBuffer pinned_in(api(), device(), n);
    PinnedBuffer pinned_out(api(), device(), n);
    std::vector<unsigned char> pageable_out(n, 0);
    std::memcpy(pinned_in.get(), expected.data(), n);

    KEEL_ASSERT_OK(api().memcpy_h2d(stream.get(), a.addr(), pinned_in.get(), n));
    KEEL_ASSERT_OK(api().memcpy_d2d(stream.get(), b.addr(), a.addr(), n));
    KEEL_ASSERT_OK(api().memcpy_d2h(stream.get(), pinned_out.get(), b.addr(), n));
    KEEL_ASSERT_OK(api().memcpy_d2h(stream.get(), pageable_out.data(), b.addr(), n));
    KEEL_ASSERT_OK(api().stream_synchronize(stream.get()));

    EXPECT_EQ(std::memcmp(pinned_out.get(), expected.data(), n), 0);
    EXPECT_EQ(pageable_out, expected);
}

TEST_F(CudaCopy, PageableSourceAndOffsetsWithinAnAllocationWork) {
    constexpr std::size_t n = 4096;
    const std::vector<unsigned char> src = pattern(n, 3);
    std::vector<unsigned char> back(n / 2, 0);
    Stream stream(api(), device());
    DeviceBuffer buf(api(), device(), n);
    KEEL_ASSERT_OK(api().memcpy_h2d(stream.get(), buf.addr(), src.data(), n));
    KEEL_ASSERT_OK(api().memcpy_d2h(stream.get(), back.data(), buf.addr() + n / 2, n / 2));
    KEEL_ASSERT_OK(api().stream_synchronize(stream.get()));
    EXPECT_EQ(0, std::memcmp(back.data(), src.data() + n / 2, n / 2));
}

TEST_F(CudaCopy, MemsetFillsExactlyTheRangeAsked) {
    constexpr std::size_t n = 1000;
    Stream stream(api(), device());
    DeviceBuffer buf(api(), device(), n);
    std::vector<unsigned char> host(n, 0);
    KEEL_ASSERT_OK(api().memset_d8(stream.get(), buf.addr(), 0x11, n));
    KEEL_ASSERT_OK(api().memset_d8(stream.get(), buf.addr() + 100, 0xEE, 50));
    KEEL_ASSERT_OK(api().memcpy_d2h(stream.get(), host.data(), buf.addr(), n));
    KEEL_ASSERT_OK(api().stream_synchronize(stream.get()));
    for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(host[i], (i >= 100 && i < 150) ? 0xEE : 0x11) << "at byte " << i;
}

// Pageable (non-pinned) host memory is read and written when the copy
// executes and enqueueing does not block: what CUDA's own pageable path
// does not do, so the plugin stages these copies itself.
TEST_F(CudaCopy, APageableDestinationIsWrittenWhenTheCopyRunsWithoutBlockingTheCaller) {
    constexpr std::size_t n = 4096;
    Stream stream(api(), device());
    DeviceBuffer buf(api(), device(), n);
    KEEL_ASSERT_OK(api().memset_d8(stream.get(), buf.addr(), 0xAB, n));
    std::vector<unsigned char> out(n, 0);
    spin(stream.get(), 300);
    KEEL_ASSERT_OK(api().memcpy_d2h(stream.get(), out.data(), buf.addr(), n));
    int32_t done = 1;
    KEEL_ASSERT_OK(api().stream_query(stream.get(), &done));
    EXPECT_EQ(done, 0) << "memcpy_d2h into pageable memory waited for the stream";
    EXPECT_EQ(out, std::vector<unsigned char>(n, 0)) << "written before the copy ran";
    KEEL_ASSERT_OK(api().stream_synchronize(stream.get()));
    EXPECT_EQ(out, std::vector<unsigned char>(n, 0xAB));
}

void fill_with_pattern(void* data, keel_status status) {
    if (status != KEEL_STATUS_OK) return;
    auto* bytes = static_cast<std::vector<unsigned char>*>(data);
    const std::vector<unsigned char> p = pattern(bytes->size(), 5);
    std::copy(p.begin(), p.end(), bytes->begin());  // in place: the copy holds bytes->data()
}

TEST_F(CudaCopy, APageableSourceIsReadWhenTheCopyRuns) {
    constexpr std::size_t n = 4096;
    Stream stream(api(), device());
    DeviceBuffer buf(api(), device(), n);
    std::vector<unsigned char> src(n, 0);
    spin(stream.get(), 100);
    // Runs before the copy, on the stream: the copy must see what it wrote.
    KEEL_ASSERT_OK(api().stream_enqueue_host_func(stream.get(), &fill_with_pattern, &src));
    KEEL_ASSERT_OK(api().memcpy_h2d(stream.get(), buf.addr(), src.data(), n));
    std::vector<unsigned char> back(n, 0);
    KEEL_ASSERT_OK(api().memcpy_d2h(stream.get(), back.data(), buf.addr(), n));
    KEEL_ASSERT_OK(api().stream_synchronize(stream.get()));
    EXPECT_EQ(back, pattern(n, 5));
}

TEST_F(CudaCopy, LargePageableCopiesRoundTripInChunks) {
    constexpr std::size_t n = (20u << 20) + 3;  // several 4 MiB staging chunks and a tail
    const std::vector<unsigned char> expected = pattern(n, 11);
    Stream stream(api(), device());
    DeviceBuffer buf(api(), device(), n);
    std::vector<unsigned char> back(n, 0);
    for (int round = 0; round < 3; ++round) {  // staging buffers are reused
        std::fill(back.begin(), back.end(), 0);
        KEEL_ASSERT_OK(api().memcpy_h2d(stream.get(), buf.addr(), expected.data(), n));
        KEEL_ASSERT_OK(api().memcpy_d2h(stream.get(), back.data(), buf.addr(), n));
        KEEL_ASSERT_OK(api().stream_synchronize(stream.get()));
        ASSERT_EQ(back, expected) << "round " << round;
    }
}

TEST_F(CudaCopy, InlineCopyCapturesTheSourceBeforeReturning) {
    Stream stream(api(), device());
    DeviceBuffer buf(api(), device(), KEEL_INLINE_COPY_MAX);
    std::vector<unsigned char> src = pattern(KEEL_INLINE_COPY_MAX, 9);
    const std::vector<unsigned char> expected = src;
    // The stream is busy for a while, so the copy runs long after the call.
    spin(stream.get(), 50);
    KEEL_ASSERT_OK(api().memcpy_h2d_inline(stream.get(), buf.addr(), src.data(), src.size()));
    std::fill(src.begin(), src.end(), 0);  // reused at once, as the ABI allows
    std::vector<unsigned char> back(src.size(), 0);
    KEEL_ASSERT_OK(api().memcpy_d2h(stream.get(), back.data(), buf.addr(), back.size()));
    KEEL_ASSERT_OK(api().stream_synchronize(stream.get()));
    EXPECT_EQ(back, expected);
}

TEST_F(CudaCopy, InlineCopyOfOddSizesAtOddOffsets) {
    Stream stream(api(), device());
    DeviceBuffer buf(api(), device(), 512);
    KEEL_ASSERT_OK(api().memset_d8(stream.get(), buf.addr(), 0, 512));
    const std::vector<unsigned char> src = pattern(37, 1);
    KEEL_ASSERT_OK(api().memcpy_h2d_inline(stream.get(), buf.addr() + 3, src.data(), src.size()));
    std::vector<unsigned char> back(64, 0xFF);
    KEEL_ASSERT_OK(api().memcpy_d2h(stream.get(), back.data(), buf.addr(), back.size()));
    KEEL_ASSERT_OK(api().stream_synchronize(stream.get()));
    for (std::size_t i = 0; i < back.size(); ++i) {
        const unsigned char want = (i >= 3 && i < 40) ? src[i - 3] : 0;
        ASSERT_EQ(back[i], want) << "at byte " << i;
    }
}

TEST_F(CudaCopy, InlineCopyAboveTheLimitIsRejected) {
    Stream stream(api(), device());
    DeviceBuffer buf(api(), device(), 4096);
    std::vector<unsigned char> src(KEEL_INLINE_COPY_MAX + 1);
    Outcome o = outcome(api().memcpy_h2d_inline(stream.get(), buf.addr(), src.data(), src.size()));
    EXPECT_EQ(o.code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(o.message.find("KEEL_INLINE_COPY_MAX"), std::string::npos) << o.message;
}

TEST_F(CudaCopy, RangesOutsideAllocationsFailAtTheCallNotOnTheDevice) {
    Stream stream(api(), device());
    DeviceBuffer buf(api(), device(), 1024);
    std::vector<unsigned char> host(2048);

    Outcome past_end = outcome(api().memcpy_h2d(stream.get(), buf.addr() + 1000, host.data(), 100));
    EXPECT_EQ(past_end.code, KEEL_STATUS_OUT_OF_RANGE) << past_end.message;
    EXPECT_NE(past_end.message.find("[cuda memcpy_h2d] destination"), std::string::npos) << past_end.message;

    Outcome nowhere = outcome(api().memcpy_d2h(stream.get(), host.data(), 0x1000, 16));
    EXPECT_EQ(nowhere.code, KEEL_STATUS_INVALID_ARGUMENT) << nowhere.message;
    EXPECT_NE(nowhere.message.find("source 0x1000 is not a device allocation of cuda:0"), std::string::npos)
        << nowhere.message;

    Outcome memset_past = outcome(api().memset_d8(stream.get(), buf.addr(), 0, 1025));
    EXPECT_EQ(memset_past.code, KEEL_STATUS_OUT_OF_RANGE) << memset_past.message;

    Outcome overlap = outcome(api().memcpy_d2d(stream.get(), buf.addr() + 10, buf.addr(), 100));
    EXPECT_EQ(overlap.code, KEEL_STATUS_INVALID_ARGUMENT) << overlap.message;
    EXPECT_NE(overlap.message.find("overlap"), std::string::npos) << overlap.message;

    // None of it reached the device: the stream is healthy.
    KEEL_EXPECT_OK(api().stream_synchronize(stream.get()));
}

TEST_F(CudaCopy, ZeroByteCopiesAreNoOps) {
    Stream stream(api(), device());
    KEEL_EXPECT_OK(api().memcpy_h2d(stream.get(), 0, nullptr, 0));
    KEEL_EXPECT_OK(api().memcpy_d2h(stream.get(), nullptr, 0, 0));
    KEEL_EXPECT_OK(api().memcpy_d2d(stream.get(), 0, 0, 0));
    KEEL_EXPECT_OK(api().memset_d8(stream.get(), 0, 0, 0));
    KEEL_EXPECT_OK(api().memcpy_h2d_inline(stream.get(), 0, nullptr, 0));
    KEEL_EXPECT_OK(api().stream_synchronize(stream.get()));
}

}  // namespace
}  // namespace keel::cuda_test
