// Broadcast planning (plugins/support broadcast.hpp, lerp_args.hpp): the
// canonical forms every plugin's kernels rely on.
#include <keel/plugin/broadcast.hpp>
#include <keel/plugin/lerp_args.hpp>
#include <keel/testing/launch_args.hpp>

#include <gtest/gtest.h>

#include <random>

namespace keel::plugin {
namespace {

using Dims = std::vector<std::int64_t>;
using keel::testing::LaunchArgs;

StridedLayout layout_of(const Dims& space, const std::vector<Dims>& ops) {
    std::vector<NamedShape> named;
    for (const Dims& d : ops) named.push_back({"op", d});
    Result<StridedLayout> l = make_layout({"space", space}, named);
    EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.error().message());
    return l.ok() ? *l : StridedLayout{};
}

Dims sizes(const StridedLayout& l) { return Dims(l.size.begin(), l.size.begin() + l.rank); }
Dims strides(const StridedLayout& l, int op) {
    return Dims(l.stride[op].begin(), l.stride[op].begin() + l.rank);
}

TEST(BroadcastShapes, FollowsNumpyRules) {
    const Dims a{2, 3, 4}, b{2, 2, 3, 4}, c{2, 1, 3}, d{2, 2, 3}, e{}, z{0, 1};
    std::vector<NamedShape> ab{{"a", a}, {"b", b}}, cd{{"c", c}, {"d", d}}, ae{{"a", a}, {"e", e}};
    EXPECT_EQ(*broadcast_shapes(ab), (Dims{2, 2, 3, 4}));
    EXPECT_EQ(*broadcast_shapes(cd), (Dims{2, 2, 3}));
    EXPECT_EQ(*broadcast_shapes(ae), a);
    const Dims one_by_five{1, 5};
    std::vector<NamedShape> zz{{"z", z}, {"one_by_five", one_by_five}};
    EXPECT_EQ(*broadcast_shapes(zz), (Dims{0, 5}));  // 1 broadcasts to 0
}

TEST(BroadcastShapes, NamesTheShapesAndDimThatDisagree) {
    const Dims a{2, 3}, b{4, 3};
    std::vector<NamedShape> ab{{"x", a}, {"y", b}};
    Result<Shape> r = broadcast_shapes(ab);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(r.error().message(), "x [2, 3] and y [4, 3] do not broadcast (dim -2: 2 vs 4)");
}

TEST(CheckedNumel, RejectsNegativeDimsTooManyDimsAndOverflow) {
    EXPECT_FALSE(checked_numel({"s", Dims{2, -1}}).ok());
    EXPECT_FALSE(checked_numel({"s", Dims(17, 1)}).ok());
    EXPECT_FALSE(checked_numel({"s", Dims{1 << 30, 1 << 30, 1 << 30}}).ok());
    EXPECT_EQ(*checked_numel({"s", Dims{1 << 30, 1 << 30, 1 << 30, 0}}), 0);
    EXPECT_EQ(*checked_numel({"s", Dims{}}), 1);
}

TEST(MakeLayout, MergesEqualShapesIntoOneContiguousDim) {
    const StridedLayout l = layout_of({16, 102400}, {{16, 102400}, {16, 102400}, {}});
    EXPECT_EQ(sizes(l), (Dims{16 * 102400}));
    EXPECT_TRUE(l.is_identity(0));
    EXPECT_TRUE(l.is_identity(1));
    EXPECT_TRUE(l.is_uniform(2));
}

TEST(MakeLayout, KeepsOnlyTheDimsWhereSomeOperandChangesPattern) {
    // dout [16,3,244,244], w [3,1,244], x [16,1,1,1]
    const StridedLayout l = layout_of({16, 3, 244, 244}, {{16, 3, 244, 244}, {3, 1, 244}, {16, 1, 1, 1}});
    EXPECT_EQ(sizes(l), (Dims{16, 3, 244, 244}));
    EXPECT_EQ(strides(l, 1), (Dims{0, 244, 0, 1}));
    EXPECT_EQ(strides(l, 2), (Dims{1, 0, 0, 0}));
    // Without w the three inner dims merge.
    const StridedLayout m = layout_of({16, 3, 244, 244}, {{16, 3, 244, 244}, {16, 1, 1, 1}});
    EXPECT_EQ(sizes(m), (Dims{16, 3 * 244 * 244}));
    EXPECT_EQ(strides(m, 1), (Dims{1, 0}));
}

TEST(MakeLayout, RejectsAnOperandThatDoesNotBroadcastToTheSpace) {
    const Dims space{2, 3}, op{4, 3};
    std::vector<NamedShape> ops{{"x", op}};
    Result<StridedLayout> r = make_layout({"out", space}, ops);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message(), "x [4, 3] does not broadcast to out [2, 3] (dim -2)");
}

TEST(SplitReduction, ReducingLeadingDimsIsAColumnReductionWithoutOuterDims) {
    const StridedLayout l = layout_of({2, 2, 3, 4}, {{2, 2, 3, 4}, {}, {3, 4}});
    const ReductionLayout r = split_reduction(l, 2);
    EXPECT_FALSE(r.inner_reduced);
    EXPECT_EQ(r.inner, 12);
    EXPECT_EQ(r.outer.numel, 1);
    EXPECT_EQ(r.reduce.rank, 1);  // the two leading dims merged
    EXPECT_EQ(r.reduce.numel, 4);
    EXPECT_EQ(r.targets(), 12);
    EXPECT_EQ(r.terms_per_target(), 4);
}

TEST(SplitReduction, ReducingAMiddleDimKeepsOuterAndInnerDims) {
    const StridedLayout l = layout_of({2, 2, 3}, {{2, 2, 3}, {}, {2, 1, 3}});
    const ReductionLayout r = split_reduction(l, 2);
    EXPECT_FALSE(r.inner_reduced);
    EXPECT_EQ(r.inner, 3);
    EXPECT_EQ(r.outer.numel, 2);
    EXPECT_EQ(r.outer.stride[2][0], 3);  // the target is dense in the kept dims
    EXPECT_EQ(r.reduce.numel, 2);
    EXPECT_EQ(r.targets(), 6);
}

TEST(SplitReduction, ReducingTrailingDimsIsARowReduction) {
    const StridedLayout l = layout_of({16, 3, 244, 244}, {{16, 3, 244, 244}, {3, 1, 244}, {16, 1, 1, 1}});
    const ReductionLayout r = split_reduction(l, 2);
    EXPECT_TRUE(r.inner_reduced);
    EXPECT_EQ(r.inner, 244);
    EXPECT_EQ(r.outer.numel, 16);
    EXPECT_EQ(r.reduce.numel, 3 * 244);
    EXPECT_EQ(r.targets(), 16);
    EXPECT_EQ(r.terms_per_target(), 3 * 244 * 244);
}

TEST(ForEachRun, VisitsEveryIndexOnceWithItsOffsets) {
    std::mt19937_64 rng(3);
    const StridedLayout l = layout_of({3, 4, 5, 6}, {{3, 4, 5, 6}, {4, 1, 6}, {3, 1, 5, 1}});
    for (int trial = 0; trial < 50; ++trial) {
        std::int64_t begin = std::uniform_int_distribution<std::int64_t>(0, l.numel)(rng);
        std::int64_t end = std::uniform_int_distribution<std::int64_t>(begin, l.numel)(rng);
        std::int64_t index = begin;
        for_each_run(l, begin, end, [&](const std::int64_t* off, std::int64_t n) {
            for (std::int64_t k = 0; k < n; ++k, ++index) {
                const auto want = l.offsets_at(index);
                for (int op = 0; op < l.operands; ++op)
                    ASSERT_EQ(off[op] + k * l.inner_stride(op), want[op]) << index;
            }
        });
        EXPECT_EQ(index, end);
    }
}

TEST(ForEachRun, IndexesPastTwoToTheThirtyOneWithoutOverflow) {
    // 3 * 2^31 elements: offsets are computed, never dereferenced.
    const std::int64_t big = std::int64_t{1} << 31;
    const StridedLayout l = layout_of({3, big}, {{3, big}, {3, 1}});
    const std::int64_t begin = 2 * big + 5;
    std::vector<std::pair<std::int64_t, std::int64_t>> runs;
    for_each_run(l, begin, begin + 10, [&](const std::int64_t* off, std::int64_t n) {
        runs.emplace_back(off[0], off[1]);
        EXPECT_EQ(n, 10);
    });
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].first, 2 * big + 5);
    EXPECT_EQ(runs[0].second, 2);
    LayoutCursor c(l, 2 * big - 1);  // the last element of row 1
    EXPECT_EQ(c.offset(0), 2 * big - 1);
    EXPECT_EQ(c.offset(1), 1);
    c.next();
    EXPECT_EQ(c.offset(0), 2 * big);
    EXPECT_EQ(c.offset(1), 2);
}

// Builds the argument list of a lerp_grad launch on host addresses.
struct GradLaunch {
    std::vector<Dims> shapes;  // x, y, w, dout
    bool dx = true, dy = true;
    LaunchArgs args;

    GradLaunch(Dims x, Dims y, Dims w, Dims dout, bool want_dx = true, bool want_dy = true)
        : shapes{std::move(x), std::move(y), std::move(w), std::move(dout)}, dx(want_dx), dy(want_dy) {
        const auto n = [](const Dims& d) {
            std::int64_t v = 1;
            for (auto e : d) v *= e;
            return static_cast<std::uint64_t>(v) * 4;
        };
        const keel_dtype f32 = KEEL_DTYPE_F32;
        const std::uint64_t gb = std::uint64_t{1} << 32;  // far-apart fake addresses
        args.buffer(1 * gb, n(shapes[0]), f32).buffer(2 * gb, n(shapes[1]), f32);
        args.buffer(3 * gb, n(shapes[2]), f32).buffer(4 * gb, n(shapes[3]), f32);
        if (dx) args.buffer(5 * gb, n(shapes[0]), f32); else args.absent(f32);
        if (dy) args.buffer(6 * gb, n(shapes[1]), f32); else args.absent(f32);
        for (const Dims& d : shapes) args.ints(d);
    }
    Result<LerpGradPlan> plan() const {
        KEEL_TRY_ASSIGN(const LaunchArgsView v, LaunchArgsView::make(args.get(), "lerp_grad"));
        const keel_dtype f32 = KEEL_DTYPE_F32;
        return plan_lerp_grad(v, std::span(&f32, 1));
    }
};

TEST(PlanLerpGrad, WithoutBroadcastIsOneElementwisePass) {
    const GradLaunch g({16, 102400}, {16, 102400}, {16, 102400}, {16, 102400});
    const LerpGradPlan p = *g.plan();
    ASSERT_EQ(p.pass_count, 1);
    EXPECT_EQ(p.passes[0].dx, GradOutput::elementwise);
    EXPECT_EQ(p.passes[0].dy, GradOutput::elementwise);
    EXPECT_EQ(p.passes[0].layout.rank, 1);
}

TEST(PlanLerpGrad, ReducesOneGradientWhileWritingTheOtherInTheSamePass) {
    const GradLaunch g({16, 1, 1, 1}, {16, 3, 244, 244}, {3, 1, 244}, {16, 3, 244, 244});
    const LerpGradPlan p = *g.plan();
    ASSERT_EQ(p.pass_count, 1);
    EXPECT_EQ(p.passes[0].dx, GradOutput::reduced);
    EXPECT_EQ(p.passes[0].dy, GradOutput::elementwise);
    EXPECT_TRUE(p.passes[0].reduction.inner_reduced);
}

TEST(PlanLerpGrad, ReducesBothGradientsInOnePassWhenTheirShapesMatch) {
    const GradLaunch g({1, 5}, {5}, {4, 5}, {4, 5});
    const LerpGradPlan p = *g.plan();
    ASSERT_EQ(p.pass_count, 1);
    EXPECT_EQ(p.passes[0].dx, GradOutput::reduced);
    EXPECT_EQ(p.passes[0].dy, GradOutput::reduced);
}

TEST(PlanLerpGrad, TakesTwoPassesForTwoReductionsToDifferentShapes) {
    const GradLaunch g({4, 1, 5}, {1, 3, 5}, {4, 3, 1}, {4, 3, 5});
    const LerpGradPlan p = *g.plan();
    ASSERT_EQ(p.pass_count, 2);
    EXPECT_EQ(p.passes[0].dx, GradOutput::reduced);
    EXPECT_EQ(p.passes[0].dy, GradOutput::absent);
    EXPECT_EQ(p.passes[1].dx, GradOutput::absent);
    EXPECT_EQ(p.passes[1].dy, GradOutput::reduced);
}

TEST(PlanLerpGrad, SkipsAnAbsentGradient) {
    const GradLaunch g({4, 1, 5}, {1, 3, 5}, {4, 3, 1}, {4, 3, 5}, /*dx=*/false);
    const LerpGradPlan p = *g.plan();
    ASSERT_EQ(p.pass_count, 1);
    EXPECT_EQ(p.passes[0].dx, GradOutput::absent);
    EXPECT_EQ(p.passes[0].dy, GradOutput::reduced);
}

TEST(PlanLerpGrad, ReportsAnUnimplementedDtypeAsUnimplemented) {
    GradLaunch g({4}, {4}, {4}, {4});
    for (int i = 0; i < 6; ++i) g.args.at(static_cast<std::size_t>(i)).dtype = KEEL_DTYPE_F16;
    for (int i = 0; i < 6; ++i) g.args.at(static_cast<std::size_t>(i)).value.buffer.size /= 2;
    const Result<LerpGradPlan> p = g.plan();
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().code(), KEEL_STATUS_UNIMPLEMENTED);
    EXPECT_EQ(p.error().message(),
              "[lerp_grad] dtype f16 is not implemented on this device (implemented: f32)");
}

}  // namespace
}  // namespace keel::plugin
