// The fixture of the shared lerp tests: one backend per parameter, and the
// helpers that run a case on it and compare with the float64 reference.
#pragma once

#include "lerp_backend.hpp"
#include "lerp_reference.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

namespace keel::test {

// One broadcast case: shapes of x and y, and the weight's shape (nullopt:
// a scalar weight of value `w_scalar`).
struct LerpCase {
    Dims x, y;
    std::optional<Dims> w;
    double w_scalar = 0.3;
    [[nodiscard]] std::string describe() const;
};

// Which gradients a lerp_grad launch asks for.
struct WantGrads {
    bool dx = true;
    bool dy = true;
};

class LerpKernel : public ::testing::TestWithParam<LerpBackendFactory> {
protected:
    void SetUp() override;

    [[nodiscard]] LerpBackend& device() { return *backend_; }
    [[nodiscard]] bool implements(keel_dtype d) const;
    // The lerp dtypes this backend implements.
    [[nodiscard]] std::vector<keel_dtype> dtypes() const;

    // Runs lerp for `c` in `dtype` and expects the reference's values.
    void expect_lerp_matches(keel_dtype dtype, const LerpCase& c, bool scalar_as_f32 = false);
    // Runs lerp_grad for `c` in `dtype` and expects the reference's values.
    void expect_grad_matches(keel_dtype dtype, const LerpCase& c, WantGrads want = {});

    // Bytes a lerp_grad writes for `c`, for reproducibility checks.
    struct GradBytes {
        std::vector<std::byte> dx, dy;
    };
    [[nodiscard]] GradBytes run_grad_bytes(keel_dtype dtype, const LerpCase& c, std::uint64_t seed);

    // A shape of rank 0..max_rank with dims in 1..max_dim.
    [[nodiscard]] Dims random_shape(int max_rank, int max_dim);
    // A shape that broadcasts to `full`: some leading dims dropped, some dims set to 1.
    [[nodiscard]] Dims random_operand(const Dims& full);

    std::mt19937_64 rng_{20240611};

private:
    std::unique_ptr<LerpBackend> backend_;
};

// Bytes of a buffer of `n` elements of `dtype` whose every element is NaN,
// so elements a kernel forgets to write are caught.
[[nodiscard]] std::vector<std::byte> nan_filled(keel_dtype dtype, std::int64_t n);
[[nodiscard]] std::size_t element_size(keel_dtype dtype);

}  // namespace keel::test
