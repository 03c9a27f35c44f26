// lerp_grad on every backend against the float64 reference.
#include "lerp_fixture.hpp"

#include <cstdlib>

namespace keel::test {
namespace {

TEST_P(LerpKernel, LerpGradWithoutBroadcastMatchesReference) {
    for (keel_dtype d : dtypes()) {
        expect_grad_matches(d, {{16, 1000}, {16, 1000}, Dims{16, 1000}});
        expect_grad_matches(d, {{16, 1000}, {16, 1000}, std::nullopt, 0.3});
        expect_grad_matches(d, {{1037}, {1037}, Dims{1}});
        expect_grad_matches(d, {{}, {}, Dims{}});
    }
}

TEST_P(LerpKernel, LerpGradBroadcastsWeightWithoutReducing) {
    for (keel_dtype d : dtypes()) {
        expect_grad_matches(d, {{2, 3, 4}, {2, 3, 4}, Dims{3, 1}});
        expect_grad_matches(d, {{16, 3, 24, 24}, {16, 3, 24, 24}, Dims{3, 1, 24}});
    }
}

TEST_P(LerpKernel, LerpGradReducesXBroadcastAtTheFront) {
    for (keel_dtype d : dtypes()) {
        expect_grad_matches(d, {{2, 3, 4}, {2, 2, 3, 4}, std::nullopt});
        expect_grad_matches(d, {{2, 3, 4}, {2, 2, 3, 4}, Dims{3, 1}});
        expect_grad_matches(d, {{1000}, {300, 1000}, Dims{1000}});
    }
}

TEST_P(LerpKernel, LerpGradReducesXBroadcastInTheMiddle) {
    for (keel_dtype d : dtypes()) {
        expect_grad_matches(d, {{2, 1, 3}, {2, 2, 3}, std::nullopt});
        expect_grad_matches(d, {{2, 1, 3}, {2, 2, 3}, Dims{2, 1}});
        expect_grad_matches(d, {{7, 1, 300}, {7, 50, 300}, Dims{50, 1}});
    }
}

TEST_P(LerpKernel, LerpGradReducesXBroadcastAtTheEnd) {
    for (keel_dtype d : dtypes()) {
        expect_grad_matches(d, {{16, 1}, {16, 3}, std::nullopt});
        expect_grad_matches(d, {{1}, {100000}, std::nullopt, 0.6});
        expect_grad_matches(d, {{}, {3, 5000}, Dims{5000}});
    }
}

TEST_P(LerpKernel, LerpGradOfXWithOneElementPerBatchAgainstAnImageBatch) {
    for (keel_dtype d : dtypes()) {
        expect_grad_matches(d, {{16, 1, 1, 1}, {16, 3, 224, 224}, std::nullopt, 0.4});
        expect_grad_matches(d, {{16, 1, 1, 1}, {16, 3, 224, 224}, Dims{3, 1, 224}});
    }
}

TEST_P(LerpKernel, LerpGradComputesOnlyThePresentGradient) {
    for (keel_dtype d : dtypes()) {
        expect_grad_matches(d, {{16, 1, 1, 1}, {16, 3, 20, 20}, Dims{3, 1, 20}}, {false, true});
        expect_grad_matches(d, {{16, 1, 1, 1}, {16, 3, 20, 20}, Dims{3, 1, 20}}, {true, false});
        expect_grad_matches(d, {{64, 100}, {64, 100}, std::nullopt}, {false, true});
        expect_grad_matches(d, {{64, 100}, {64, 100}, Dims{100}}, {true, false});
    }
}

TEST_P(LerpKernel, LerpGradReducesXAndYToDifferentShapes) {
    for (keel_dtype d : dtypes()) {
        expect_grad_matches(d, {{4, 1, 5}, {1, 3, 5}, Dims{4, 3, 1}});
        expect_grad_matches(d, {{1, 5}, {5}, Dims{4, 5}});      // the same shape, both reduced
        expect_grad_matches(d, {{3}, {3}, Dims{4, 1}});         // w alone sets the shape
    }
}

TEST_P(LerpKernel, LerpGradOfRandomBroadcastShapesMatchesReference) {
    std::uniform_int_distribution<int> dim_dist(1, 7), coin(0, 2);
    for (int iter = 0; iter < 60; ++iter) {
        const Dims full = random_shape(4, dim_dist(rng_) + 1);
        const auto operand = [&] { return random_operand(full); };
        LerpCase c{operand(), operand(), coin(rng_) == 0 ? std::nullopt : std::optional<Dims>(operand())};
        const WantGrads want{coin(rng_) != 0, coin(rng_) != 1};
        for (keel_dtype d : dtypes()) expect_grad_matches(d, c, want);
    }
}

TEST_P(LerpKernel, LerpGradOfEmptyDoutFillsGradientsWithZeros) {
    for (keel_dtype d : dtypes()) {
        const LerpCase c{{0, 3}, {1, 3}, std::nullopt};
        LerpBackend& b = device();
        const std::size_t es = element_size(d);
        const keel_device_addr dy = b.upload(nan_filled(d, 3));
        LaunchArgs lb;
        lb.absent(d).absent(d).scalar_f64(0.5).absent(d).absent(d).buffer(dy, 3 * es, d);
        lb.ints(c.x).ints(c.y).ints({}).ints({0, 3});
        const Result<void> r = b.launch("lerp_grad", lb);
        ASSERT_TRUE(r.ok()) << r.error().message();
        EXPECT_EQ(decode(d, b.download(dy, 3 * es)), (std::vector<double>{0, 0, 0}));
    }
}

TEST_P(LerpKernel, LerpGradOfLargeShapesMatchesReference) {
    for (keel_dtype d : dtypes()) {
        expect_grad_matches(d, {{16, 204800}, {16, 204800}, std::nullopt, 0.3});
        expect_grad_matches(d, {{1, 204800}, {16, 204800}, Dims{16, 1}});
        expect_grad_matches(d, {{1}, {4, 1 << 20}, Dims{1 << 20}});
    }
}

TEST_P(LerpKernel, LerpGradSumsAreReproducible) {
    for (keel_dtype d : dtypes()) {
        for (const LerpCase& c : {LerpCase{{1}, {1 << 20}, std::nullopt, 0.3},
                                  LerpCase{{16, 1, 1, 1}, {16, 3, 64, 64}, Dims{3, 1, 64}},
                                  LerpCase{{1, 2048}, {512, 2048}, Dims{512, 1}}}) {
            const GradBytes first = run_grad_bytes(d, c, 7);
            const GradBytes second = run_grad_bytes(d, c, 7);
            EXPECT_TRUE(first.dx == second.dx) << c.describe();
            EXPECT_TRUE(first.dy == second.dy) << c.describe();
        }
    }
}

}  // namespace
}  // namespace keel::test
