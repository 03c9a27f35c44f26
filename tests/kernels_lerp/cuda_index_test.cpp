// The CUDA lerp kernels' index arithmetic (lerp_index.cuh), checked on the
// host: it is plain C++ outside nvcc, so it is tested without a GPU.
#include "lerp_index.cuh"

#include <gtest/gtest.h>

#include <random>

namespace keel::cuda::lerp {
namespace {

TEST(FastDivmod, AgreesWithDivisionForEveryDividendBelowTwoToTheThirtyOne) {
    std::mt19937_64 rng(11);
    std::vector<std::uint32_t> divisors{1, 2, 3, 5, 7, 224, 244, 1000, 65535, 65536, 65537,
                                        (1u << 30) - 1, 1u << 30, (1u << 31) - 1};
    for (int i = 0; i < 200; ++i) divisors.push_back(std::uniform_int_distribution<std::uint32_t>(1, (1u << 31) - 1)(rng));
    for (std::uint32_t d : divisors) {
        const FastDivmod f(d);
        std::vector<std::uint32_t> ns{0, 1, d - 1, d, d + 1, (1u << 31) - 1, (1u << 31) - 2};
        for (int i = 0; i < 2000; ++i) ns.push_back(std::uniform_int_distribution<std::uint32_t>(0, (1u << 31) - 1)(rng));
        for (std::uint32_t n : ns) {
            if (n >= (1u << 31)) continue;
            std::uint32_t q, r;
            f.divmod(n, q, r);
            ASSERT_EQ(q, n / d) << n << " / " << d;
            ASSERT_EQ(r, n % d) << n << " % " << d;
        }
    }
}

template <class Index>
void expect_offsets_match(const plugin::StridedLayout& l) {
    const DeviceLayout<Index> dl(l);
    std::mt19937_64 rng(5);
    for (int i = 0; i < 1000; ++i) {
        const std::int64_t index = std::uniform_int_distribution<std::int64_t>(0, l.numel - 1)(rng);
        Index off[3];
        dl.offsets(static_cast<Index>(index), dl.rank, off);
        const auto want = l.offsets_at(index);
        for (int op = 0; op < 3; ++op) ASSERT_EQ(static_cast<std::int64_t>(off[op]), want[op]) << index;
    }
}

TEST(DeviceLayout, OffsetsMatchTheHostLayoutOnThirtyTwoAndSixtyFourBitIndices) {
    const std::vector<std::int64_t> space{16, 3, 244, 244}, w{3, 1, 244}, x{16, 1, 1, 1};
    std::vector<plugin::NamedShape> ops{{"dout", space}, {"w", w}, {"x", x}};
    const plugin::StridedLayout l = *plugin::make_layout({"dout", space}, ops);
    expect_offsets_match<std::uint32_t>(l);
    expect_offsets_match<std::uint64_t>(l);
    // Past 2^32 elements: only the 64-bit path applies.
    const std::vector<std::int64_t> big{5, 1 << 20, 1 << 10}, bw{1 << 20, 1};
    std::vector<plugin::NamedShape> big_ops{{"dout", big}, {"w", bw}, {"x", big}};
    const plugin::StridedLayout lb = *plugin::make_layout({"dout", big}, big_ops);
    EXPECT_FALSE(fits_32_bits(lb.numel));
    expect_offsets_match<std::uint64_t>(lb);
}

}  // namespace
}  // namespace keel::cuda::lerp
