// IEEE binary16 (f16) and bfloat16 (bf16) to and from float, rounding to
// nearest even, as the devices do: one spelling for the reductions of the
// communication library, the reference results of the kernel tests and the
// test programs' data. Header-only and constexpr.
#pragma once

#include <bit>
#include <cstdint>

namespace keel {

// Exact: every f16 is a float. NaN keeps its payload, subnormals are normalised.
[[nodiscard]] constexpr float half_to_float(std::uint16_t h) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    std::uint32_t exp = (h >> 10) & 0x1fu;
    std::uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf, nan
    if (exp != 0) return std::bit_cast<float>(sign | ((exp + 127 - 15) << 23) | (mant << 13));
    if (mant == 0) return std::bit_cast<float>(sign);  // +-0
    exp = 127 - 15 + 1;                                 // subnormal: normalise
    while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
    }
    return std::bit_cast<float>(sign | (exp << 23) | ((mant & 0x3ffu) << 13));
}

// Rounds to nearest even; past 65504 (after rounding) is infinity; NaN
// becomes a quiet NaN.
[[nodiscard]] constexpr std::uint16_t float_to_half(float f) noexcept {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const std::uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds past 65504
    if (abs < 0x38800000u) {                                                    // subnormal half, or zero
        if (abs < 0x33000000u) return static_cast<std::uint16_t>(sign);         // below half the least subnormal
        const std::uint32_t exp = abs >> 23;
        const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
        const std::uint32_t shift = 126 - exp;  // 14..24
        std::uint32_t h = mant >> shift;
        const std::uint32_t rem = mant & ((1u << shift) - 1);
        const std::uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) ++h;
        return static_cast<std::uint16_t>(sign | h);
    }
    std::uint32_t h = (abs >> 13) - ((127 - 15) << 10);
    const std::uint32_t rem = abs & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
}

// Exact: bf16 is the upper half of a float.
[[nodiscard]] constexpr float bf16_to_float(std::uint16_t b) noexcept {
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

// Rounds to nearest even; NaN becomes a quiet NaN.
[[nodiscard]] constexpr std::uint16_t float_to_bf16(float f) noexcept {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
    return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace keel
