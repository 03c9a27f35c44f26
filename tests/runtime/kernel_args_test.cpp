// KernelArgs encodes exactly what keel.h says a plugin reads.
#include <keel/kernel.hpp>

#include "access.hpp"

#include <gtest/gtest.h>

namespace keel {
namespace {

TEST(KernelArgs, ScalarsCarryTheirExplicitTypeInTheMatchingMember) {
    KernelArgs args;
    args.scalar(1.5f).scalar(2.5).scalar(std::int32_t{-3}).scalar(std::int64_t{-4})
        .scalar(std::uint32_t{5}).scalar(std::uint64_t{6}).scalar_bits16(KEEL_DTYPE_BF16, 0x3f80);
    auto c = args.encode();
    ASSERT_EQ(c.size(), 7u);
    for (const keel_kernel_arg& a : c) {
        EXPECT_EQ(a.struct_size, KEEL_KERNEL_ARG_STRUCT_SIZE);
        EXPECT_EQ(a.kind, KEEL_ARG_SCALAR);
    }
    EXPECT_EQ(c[0].dtype, KEEL_DTYPE_F32);
    EXPECT_EQ(c[0].value.scalar.f32, 1.5f);
    EXPECT_EQ(c[1].dtype, KEEL_DTYPE_F64);
    EXPECT_EQ(c[1].value.scalar.f64, 2.5);
    EXPECT_EQ(c[2].dtype, KEEL_DTYPE_I32);
    EXPECT_EQ(c[2].value.scalar.i64, -3) << "integers are widened to 64 bits";
    EXPECT_EQ(c[3].dtype, KEEL_DTYPE_I64);
    EXPECT_EQ(c[3].value.scalar.i64, -4);
    EXPECT_EQ(c[4].dtype, KEEL_DTYPE_U32);
    EXPECT_EQ(c[4].value.scalar.u64, 5u);
    EXPECT_EQ(c[5].dtype, KEEL_DTYPE_U64);
    EXPECT_EQ(c[5].value.scalar.u64, 6u);
    EXPECT_EQ(c[6].dtype, KEEL_DTYPE_BF16);
    EXPECT_EQ(c[6].value.scalar.u64, 0x3f80u);
}

TEST(KernelArgs, IntArraysAreCopiedInAndPointToTheArgsOwnStorage) {
    std::vector<std::int64_t> shape{2, 3, 4};
    KernelArgs args;
    args.ints(shape).ints({7});
    shape.assign({9, 9, 9});  // the list keeps its own copy
    KernelArgs copy = args;
    for (const KernelArgs* a : {&args, &copy}) {
        auto c = a->encode();
        ASSERT_EQ(c.size(), 2u);
        EXPECT_EQ(c[0].kind, KEEL_ARG_INT_ARRAY);
        EXPECT_EQ(c[0].dtype, KEEL_DTYPE_I64);
        ASSERT_EQ(c[0].value.int_array.count, 3u);
        EXPECT_EQ(c[0].value.int_array.data[0], 2);
        EXPECT_EQ(c[0].value.int_array.data[2], 4);
        EXPECT_EQ(c[1].value.int_array.count, 1u);
        EXPECT_EQ(c[1].value.int_array.data[0], 7);
    }
    EXPECT_NE(args.encode()[0].value.int_array.data, copy.encode()[0].value.int_array.data);
}

TEST(KernelArgs, AnAbsentBufferIsAddressZeroSizeZero) {
    KernelArgs args;
    args.absent(KEEL_DTYPE_F32);
    auto c = args.encode();
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].kind, KEEL_ARG_BUFFER);
    EXPECT_EQ(c[0].dtype, KEEL_DTYPE_F32);
    EXPECT_EQ(c[0].value.buffer.addr, 0u);
    EXPECT_EQ(c[0].value.buffer.size, 0u);
    EXPECT_FALSE(detail::Access::is_empty_view(args, 0)) << "absent on purpose, not a mistake";
}

TEST(KernelArgs, AnEmptyViewIsRememberedAsAMistake) {
    KernelArgs args;
    args.buffer(DeviceView{}, KEEL_DTYPE_F32);
    EXPECT_TRUE(detail::Access::is_empty_view(args, 0));
    EXPECT_EQ(detail::Access::device_of(args, 0), nullptr);
}

}  // namespace
}  // namespace keel
