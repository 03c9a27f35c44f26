// LaunchArgs owns what the keel_launch_args it hands out points at. Read
// back here the way a plugin reads a launch (every argument, every int
// array); under ASan, which runs this suite in CI, a pointer into freed
// memory is a failure, not a silent wrong value.
#include <keel/testing/launch_args.hpp>

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace keel::testing {
namespace {

// What a plugin sees of a launch, read through the C struct only.
std::string read_as_plugin(const keel_launch_args* l) {
    std::string seen;
    for (std::size_t i = 0; i < l->arg_count; ++i) {
        const auto* a = reinterpret_cast<const keel_kernel_arg*>(reinterpret_cast<const char*>(l->args) +
                                                                 i * l->arg_struct_size);
        switch (a->kind) {
            case KEEL_ARG_BUFFER: seen += "b" + std::to_string(a->value.buffer.size); break;
            case KEEL_ARG_SCALAR: seen += "s" + std::to_string(a->value.scalar.f32); break;
            case KEEL_ARG_INT_ARRAY:
                seen += "[";
                for (std::size_t k = 0; k < a->value.int_array.count; ++k)
                    seen += std::to_string(a->value.int_array.data[k]) + ",";
                seen += "]";
                break;
            default: seen += "?";
        }
        seen += " ";
    }
    return seen;
}

TEST(LaunchArgs, PointsAtArgumentsItOwns) {
    const LaunchArgs l({buffer_arg(0x1000, 64), f32_arg(2.0f)});
    EXPECT_EQ(read_as_plugin(l.get()), "b64 s2.000000 ");
    EXPECT_EQ(l.get()->struct_size, KEEL_LAUNCH_ARGS_STRUCT_SIZE);
    EXPECT_EQ(l.get()->arg_struct_size, sizeof(keel_kernel_arg));
}

TEST(LaunchArgs, KeepsItsIntArraysAliveWhileItGrows) {
    LaunchArgs l;
    l.ints({2, 3});
    for (int i = 0; i < 40; ++i) l.buffer(0x1000, 4, KEEL_DTYPE_F32);  // reallocates the argument array
    l.ints(std::vector<std::int64_t>{7});
    const std::string seen = read_as_plugin(l.get());
    EXPECT_EQ(seen.substr(0, 5), "[2,3,");
    EXPECT_EQ(seen.substr(seen.size() - 5), "[7,] ");
}

TEST(LaunchArgs, AMovedListStillPointsAtLiveMemory) {
    auto make = [] {
        LaunchArgs l;
        l.buffer(0x2000, 8, KEEL_DTYPE_F32).scalar_f32(0.5f).ints({4, 5, 6});
        return l;
    };
    LaunchArgs moved = make();
    EXPECT_EQ(read_as_plugin(moved.get()), "b8 s0.500000 [4,5,6,] ");
    LaunchArgs assigned;
    assigned = std::move(moved);
    EXPECT_EQ(read_as_plugin(assigned.get()), "b8 s0.500000 [4,5,6,] ");
    EXPECT_EQ(moved.get()->arg_count, 0u);  // NOLINT(bugprone-use-after-move): emptied on purpose
}

}  // namespace
}  // namespace keel::testing
