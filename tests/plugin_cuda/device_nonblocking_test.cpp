// Enqueues return while a stream is held by a host function (keel.h,
// "Enqueueing never blocks"), also where CUDA would wait: the first launch
// of a kernel (CUDA loads kernels lazily, and loading may synchronise the
// whole context) and the first pageable copies (staged through pinned
// blocks allocated then). Each test is its own process under ctest, so
// these really are the first launches and staged copies of the process.
#include "cuda_plugin_fixture.hpp"

#include <keel/testing/gate.hpp>

#include <chrono>
#include <vector>

namespace keel::cuda_test {
namespace {

using CudaNonBlocking = CudaDeviceTest;
using keel::testing::Gate;
using Clock = std::chrono::steady_clock;

// Far below the gate's patience (10 s): an enqueue that waited for the held
// stream would only return once the gate gave up.
constexpr auto kPromptly = std::chrono::seconds(3);

TEST_F(CudaNonBlocking, FirstLaunchesReturnWhileAnotherStreamIsHeld) {
    Stream held(api(), device());
    Stream other(api(), device());
    DeviceBuffer buf(api(), device(), 1024 * sizeof(float));
    Gate gate;  // after the streams: its destructor opens it before they go
    KEEL_ASSERT_OK(gate.hold(api(), held.get()));

    const auto start = Clock::now();
    ASSERT_EQ(launch(other.get(), "fill", {buffer_arg(buf.addr(), buf.size()), f32_arg(5.0f)}).code,
              KEEL_STATUS_OK);
    const std::vector<unsigned char> bytes(64, 0x7F);
    KEEL_ASSERT_OK(api().memcpy_h2d_inline(held.get(), buf.addr(), bytes.data(), bytes.size()));
    ASSERT_EQ(launch(held.get(), "noop", {}).code, KEEL_STATUS_OK);
    const auto took = Clock::now() - start;
    EXPECT_LT(took, kPromptly) << "a first launch waited for the held stream";

    gate.open();
    KEEL_ASSERT_OK(api().stream_synchronize(held.get()));
    KEEL_ASSERT_OK(api().stream_synchronize(other.get()));
    EXPECT_FALSE(gate.timed_out());
}

TEST_F(CudaNonBlocking, FirstPageableCopiesReturnWhileTheirStreamIsHeld) {
    constexpr std::size_t n = (5u << 20) + 7;  // two staging chunks
    std::vector<unsigned char> src(n);
    for (std::size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>(i * 7 + 1);
    std::vector<unsigned char> back(n, 0);
    Stream stream(api(), device());
    DeviceBuffer buf(api(), device(), n);
    Gate gate;
    KEEL_ASSERT_OK(gate.hold(api(), stream.get()));

    const auto start = Clock::now();
    KEEL_ASSERT_OK(api().memcpy_h2d(stream.get(), buf.addr(), src.data(), n));
    KEEL_ASSERT_OK(api().memcpy_d2h(stream.get(), back.data(), buf.addr(), n));
    const auto took = Clock::now() - start;
    EXPECT_LT(took, kPromptly) << "a pageable copy waited for its held stream";

    gate.open();
    KEEL_ASSERT_OK(api().stream_synchronize(stream.get()));
    EXPECT_FALSE(gate.timed_out());
    EXPECT_EQ(back, src);
}

}  // namespace
}  // namespace keel::cuda_test
