// lerp on every backend against the float64 reference.
#include "lerp_fixture.hpp"
#include "lerp_tolerance.hpp"

#include <keel/testing/tolerance.hpp>

#include <cstdlib>

namespace keel::test {
namespace {

TEST_P(LerpKernel, LerpOfEqualShapesMatchesReference) {
    for (keel_dtype d : dtypes()) {
        expect_lerp_matches(d, {{16, 1000}, {16, 1000}, Dims{16, 1000}});
        expect_lerp_matches(d, {{1037}, {1037}, Dims{1037}});  // a ragged tail
        expect_lerp_matches(d, {{}, {}, Dims{}});               // rank 0
    }
}

TEST_P(LerpKernel, LerpWithScalarWeightMatchesReference) {
    for (keel_dtype d : dtypes()) {
        expect_lerp_matches(d, {{16, 1000}, {16, 1000}, std::nullopt, 0.3});
        expect_lerp_matches(d, {{16, 1000}, {16, 1000}, std::nullopt, 0.8});
        expect_lerp_matches(d, {{5, 7}, {7}, std::nullopt, 0.7}, /*scalar_as_f32=*/true);
    }
}

TEST_P(LerpKernel, LerpWithWeightOfShapeOneMatchesReference) {
    for (keel_dtype d : dtypes()) expect_lerp_matches(d, {{8, 300}, {8, 300}, Dims{1}});
}

TEST_P(LerpKernel, LerpBroadcastsWeightAlongAMiddleDim) {
    for (keel_dtype d : dtypes()) {
        expect_lerp_matches(d, {{2, 3, 4}, {2, 3, 4}, Dims{3, 1}});
        expect_lerp_matches(d, {{16, 1, 1, 1}, {16, 3, 24, 24}, Dims{3, 1, 24}});
    }
}

TEST_P(LerpKernel, LerpBroadcastsXAtTheFrontAndInTheMiddle) {
    for (keel_dtype d : dtypes()) {
        expect_lerp_matches(d, {{2, 3, 4}, {2, 2, 3, 4}, Dims{4}});
        expect_lerp_matches(d, {{2, 1, 3}, {2, 2, 3}, std::nullopt});
        expect_lerp_matches(d, {{2, 2, 3}, {2, 1, 3}, Dims{2, 1, 1}});
    }
}

TEST_P(LerpKernel, LerpOfXWithOneElementPerBatchAgainstAnImageBatch) {
    for (keel_dtype d : dtypes())
        expect_lerp_matches(d, {{16, 1, 1, 1}, {16, 3, 224, 224}, Dims{3, 1, 224}});
}

TEST_P(LerpKernel, LerpIsExactAtWeightZeroAndOne) {
    for (keel_dtype d : dtypes()) {
        // The reference bound at w in {0, 1} is loose; exactness is checked
        // by comparing with the inputs themselves.
        const Dims s{3, 333};
        const std::vector<double> x = random_values(d, numel(s), -2, 2, rng_);
        const std::vector<double> y = random_values(d, numel(s), -2, 2, rng_);
        for (double wv : {0.0, 1.0}) {
            LerpBackend& b = device();
            const std::size_t bytes = x.size() * element_size(d);
            const keel_device_addr out = b.upload(nan_filled(d, numel(s)));
            LaunchArgs lb;
            lb.buffer(b.upload(encode(d, x)), bytes, d).buffer(b.upload(encode(d, y)), bytes, d);
            lb.scalar_f64(wv).buffer(out, bytes, d).ints(s).ints(s).ints({}).ints(s);
            const Result<void> r = b.launch("lerp", lb);
            ASSERT_TRUE(r.ok()) << r.error().message();
            EXPECT_EQ(decode(d, b.download(out, bytes)), wv == 0.0 ? x : y) << "w = " << wv;
        }
    }
}

TEST_P(LerpKernel, LerpOfRandomBroadcastShapesMatchesReference) {
    std::uniform_int_distribution<int> dim_dist(1, 6), coin(0, 2);
    for (int iter = 0; iter < 40; ++iter) {
        const Dims full = random_shape(4, dim_dist(rng_) + 1);
        const auto operand = [&] { return random_operand(full); };
        LerpCase c{operand(), operand(), coin(rng_) == 0 ? std::nullopt : std::optional<Dims>(operand())};
        for (keel_dtype d : dtypes()) expect_lerp_matches(d, c);
    }
}

TEST_P(LerpKernel, LerpMayWriteItsResultOverX) {
    for (keel_dtype d : dtypes()) {
        const Dims s{4, 257};
        const std::vector<double> x = random_values(d, numel(s), -2, 2, rng_);
        const std::vector<double> y = random_values(d, numel(s), -2, 2, rng_);
        const RefLerp ref = reference_lerp(s, x, s, y, RefWeight{0.25, {}, {}});
        LerpBackend& b = device();
        const std::size_t bytes = x.size() * element_size(d);
        const keel_device_addr xa = b.upload(encode(d, x));
        LaunchArgs lb;
        lb.buffer(xa, bytes, d).buffer(b.upload(encode(d, y)), bytes, d).scalar_f64(0.25);
        lb.buffer(xa, bytes, d).ints(s).ints(s).ints({}).ints(s);
        const Result<void> r = b.launch("lerp", lb);
        ASSERT_TRUE(r.ok()) << r.error().message();
        const std::vector<double> got = decode(d, b.download(xa, bytes));
        const keel_dtype compute = b.compute_dtype(d);
        const Comparison c = compare_within("out (over x)", got, ref.out, [&](std::size_t i) {
            return lerp_bound(d, compute, ref.out[i], ref.scale[i]);
        });
        EXPECT_TRUE(c.ok()) << c.describe("out (over x)");
    }
}

}  // namespace
}  // namespace keel::test
