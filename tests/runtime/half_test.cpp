// keel's f16 and bf16 conversions (<keel/base/half.hpp>) against the
// compiler's own binary16 (_Float16, which rounds to nearest even) over every
// f16 value and a spread of floats, and against exact arithmetic for bf16.
#include <keel/base/half.hpp>

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

std::uint16_t bits_of(_Float16 h) {
    std::uint16_t b;
    std::memcpy(&b, &h, sizeof b);
    return b;
}

_Float16 half_of(std::uint16_t b) {
    _Float16 h;
    std::memcpy(&h, &b, sizeof h);
    return h;
}

TEST(Half, EveryF16ValueWidensExactly) {
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        const float want = static_cast<float>(half_of(static_cast<std::uint16_t>(h)));
        const float got = keel::half_to_float(static_cast<std::uint16_t>(h));
        if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << std::hex << h;
        } else {
            EXPECT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(want)) << std::hex << h;
        }
    }
}

TEST(Half, FloatsNarrowToTheNearestEvenF16LikeTheCompiler) {
    int wrong = 0;
    // Every 4099th float: all exponents, both signs, subnormal halves, ties,
    // overflow to infinity; NaN only as a quiet NaN.
    for (std::uint64_t x = 0; x < (1ull << 32); x += 4099) {
        const float f = std::bit_cast<float>(static_cast<std::uint32_t>(x));
        const std::uint16_t got = keel::float_to_half(f);
        if (std::isnan(f)) {
            wrong += !((got & 0x7c00u) == 0x7c00u && (got & 0x3ffu) != 0);
        } else {
            wrong += got != bits_of(static_cast<_Float16>(f));
        }
    }
    EXPECT_EQ(wrong, 0);
    EXPECT_EQ(keel::float_to_half(65504.0f), 0x7bffu);
    EXPECT_EQ(keel::float_to_half(65520.0f), 0x7c00u);     // rounds past the largest finite f16
    EXPECT_EQ(keel::float_to_half(std::ldexp(1.0f, -25)), 0u);  // the tie below the least subnormal: even
    EXPECT_EQ(keel::float_to_half(std::ldexp(1.5f, -25)), 1u);
}

TEST(Half, Bf16RoundsToNearestEvenAndWidensExactly) {
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
        const float f = keel::bf16_to_float(static_cast<std::uint16_t>(b));
        EXPECT_EQ(std::bit_cast<std::uint32_t>(f), b << 16);
        if (!std::isnan(f)) {
            EXPECT_EQ(keel::float_to_bf16(f), b);
        }
    }
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to the even one, 1.
    EXPECT_EQ(keel::float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80u);
    EXPECT_EQ(keel::float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82u);
    EXPECT_TRUE(std::isnan(keel::bf16_to_float(keel::float_to_bf16(std::nanf("")))));
}

static_assert(keel::float_to_half(1.0f) == 0x3c00u && keel::half_to_float(0x3c00u) == 1.0f);

}  // namespace
