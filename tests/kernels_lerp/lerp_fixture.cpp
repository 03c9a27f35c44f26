#include "lerp_fixture.hpp"

#include "lerp_tolerance.hpp"

#include <keel/testing/tolerance.hpp>

#include <algorithm>

namespace keel::test {
namespace {

// Expects |got - ref| <= bound(i) everywhere; reports the first few misses.
void expect_close(const std::string& what, const std::vector<double>& got, const std::vector<double>& ref,
                  const std::function<double(std::size_t)>& bound) {
    const Comparison c = compare_within(what, got, ref, bound);
    EXPECT_TRUE(c.ok()) << c.describe(what);
}

}  // namespace

std::string LerpCase::describe() const {
    return "x " + dims_string(x) + ", y " + dims_string(y) + ", w " +
           (w ? dims_string(*w) : "scalar " + std::to_string(w_scalar));
}

std::size_t element_size(keel_dtype dtype) {
    return dtype == KEEL_DTYPE_F64 ? 8 : dtype == KEEL_DTYPE_F32 ? 4 : 2;
}

std::vector<std::byte> nan_filled(keel_dtype dtype, std::int64_t n) {
    // All-ones bytes are a NaN in every float format.
    return std::vector<std::byte>(static_cast<std::size_t>(n) * element_size(dtype), std::byte{0xff});
}

void LerpKernel::SetUp() {
    backend_ = GetParam().make();
    ASSERT_TRUE(backend_);
    const std::string why = backend_->unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
}

bool LerpKernel::implements(keel_dtype d) const {
    const std::vector<keel_dtype> ds = backend_->dtypes();
    return std::find(ds.begin(), ds.end(), d) != ds.end();
}

std::vector<keel_dtype> LerpKernel::dtypes() const { return backend_->dtypes(); }

void LerpKernel::expect_lerp_matches(keel_dtype dtype, const LerpCase& c, bool scalar_as_f32) {
    SCOPED_TRACE(std::string("lerp ") + c.describe() + " dtype " + std::to_string(dtype));
    LerpBackend& b = device();
    const std::vector<double> x = random_values(dtype, numel(c.x), -2, 2, rng_);
    const std::vector<double> y = random_values(dtype, numel(c.y), -2, 2, rng_);
    RefWeight w;
    if (c.w) {
        w.shape = *c.w;
        w.values = random_values(dtype, numel(*c.w), -0.25, 1.25, rng_);
    } else {
        w.scalar = scalar_as_f32 ? static_cast<double>(static_cast<float>(c.w_scalar)) : c.w_scalar;
    }
    const RefLerp ref = reference_lerp(c.x, x, c.y, y, w);
    const std::size_t es = element_size(dtype);
    const std::size_t out_bytes = ref.out.size() * es;

    LaunchArgs lb;
    lb.buffer(b.upload(encode(dtype, x)), x.size() * es, dtype);
    lb.buffer(b.upload(encode(dtype, y)), y.size() * es, dtype);
    if (c.w)
        lb.buffer(b.upload(encode(dtype, w.values)), w.values.size() * es, dtype);
    else if (scalar_as_f32)
        lb.scalar_f32(static_cast<float>(*w.scalar));
    else
        lb.scalar_f64(*w.scalar);
    const keel_device_addr out = b.upload(nan_filled(dtype, numel(ref.shape)));
    lb.buffer(out, out_bytes, dtype);
    lb.ints(c.x).ints(c.y).ints(c.w ? *c.w : Dims{}).ints(ref.shape);
    const Result<void> r = b.launch("lerp", lb);
    ASSERT_TRUE(r.ok()) << r.error().message();

    const std::vector<double> got = decode(dtype, b.download(out, out_bytes));
    const keel_dtype compute = b.compute_dtype(dtype);
    expect_close("out", got, ref.out,
                 [&](std::size_t i) { return lerp_bound(dtype, compute, ref.out[i], ref.scale[i]); });
}

void LerpKernel::expect_grad_matches(keel_dtype dtype, const LerpCase& c, WantGrads want) {
    SCOPED_TRACE(std::string("lerp_grad ") + c.describe() + " dtype " + std::to_string(dtype) +
                 (want.dx ? " dx" : "") + (want.dy ? " dy" : ""));
    LerpBackend& b = device();
    RefWeight w;
    Dims out_shape;
    if (c.w) {
        w.shape = *c.w;
        w.values = random_values(dtype, numel(*c.w), -0.25, 1.25, rng_);
        out_shape = broadcast({c.x, c.y, *c.w});
    } else {
        w.scalar = c.w_scalar;
        out_shape = broadcast({c.x, c.y});
    }
    const std::vector<double> dout = random_values(dtype, numel(out_shape), -1, 1, rng_);
    const RefGrad ref = reference_lerp_grad(c.x, c.y, w, out_shape, dout);
    const std::size_t es = element_size(dtype);

    LaunchArgs lb;
    lb.absent(dtype).absent(dtype);  // x and y are not read
    if (c.w)
        lb.buffer(b.upload(encode(dtype, w.values)), w.values.size() * es, dtype);
    else
        lb.scalar_f64(*w.scalar);
    lb.buffer(b.upload(encode(dtype, dout)), dout.size() * es, dtype);
    const keel_device_addr dx = want.dx ? b.upload(nan_filled(dtype, numel(c.x))) : 0;
    const keel_device_addr dy = want.dy ? b.upload(nan_filled(dtype, numel(c.y))) : 0;
    if (want.dx) lb.buffer(dx, ref.dx.size() * es, dtype); else lb.absent(dtype);
    if (want.dy) lb.buffer(dy, ref.dy.size() * es, dtype); else lb.absent(dtype);
    lb.ints(c.x).ints(c.y).ints(c.w ? *c.w : Dims{}).ints(out_shape);
    const Result<void> r = b.launch("lerp_grad", lb);
    ASSERT_TRUE(r.ok()) << r.error().message();

    const keel_dtype compute = b.compute_dtype(dtype);
    const auto check = [&](const char* name, keel_device_addr addr, const std::vector<double>& ref_v,
                           const std::vector<double>& abs_v, const std::vector<std::int64_t>& terms) {
        const std::vector<double> got = decode(dtype, b.download(addr, ref_v.size() * es));
        expect_close(name, got, ref_v, [&](std::size_t i) {
            return lerp_grad_bound(dtype, compute, ref_v[i], abs_v[i], terms[i]);
        });
    };
    if (want.dx) check("dx", dx, ref.dx, ref.dx_abs, ref.dx_terms);
    if (want.dy) check("dy", dy, ref.dy, ref.dy_abs, ref.dy_terms);
}

Dims LerpKernel::random_shape(int max_rank, int max_dim) {
    Dims s(static_cast<std::size_t>(std::uniform_int_distribution<int>(0, max_rank)(rng_)));
    for (std::int64_t& v : s) v = std::uniform_int_distribution<int>(1, max_dim)(rng_);
    return s;
}

Dims LerpKernel::random_operand(const Dims& full) {
    std::uniform_int_distribution<int> coin(0, 2);
    const std::size_t drop =
        coin(rng_) == 0 ? std::uniform_int_distribution<std::size_t>(0, full.size())(rng_) : 0;
    Dims s(full.begin() + static_cast<std::ptrdiff_t>(drop), full.end());
    for (std::int64_t& v : s)
        if (coin(rng_) == 0) v = 1;
    return s;
}

LerpKernel::GradBytes LerpKernel::run_grad_bytes(keel_dtype dtype, const LerpCase& c,
                                                 std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    LerpBackend& b = device();
    const Dims out_shape = c.w ? broadcast({c.x, c.y, *c.w}) : broadcast({c.x, c.y});
    const std::size_t es = element_size(dtype);
    LaunchArgs lb;
    lb.absent(dtype).absent(dtype);
    if (c.w)
        lb.buffer(b.upload(encode(dtype, random_values(dtype, numel(*c.w), 0, 1, rng))),
                  static_cast<std::size_t>(numel(*c.w)) * es, dtype);
    else
        lb.scalar_f64(c.w_scalar);
    lb.buffer(b.upload(encode(dtype, random_values(dtype, numel(out_shape), -1, 1, rng))),
              static_cast<std::size_t>(numel(out_shape)) * es, dtype);
    const std::size_t nx = static_cast<std::size_t>(numel(c.x)) * es;
    const std::size_t ny = static_cast<std::size_t>(numel(c.y)) * es;
    const keel_device_addr dx = b.upload(nan_filled(dtype, numel(c.x)));
    const keel_device_addr dy = b.upload(nan_filled(dtype, numel(c.y)));
    lb.buffer(dx, nx, dtype).buffer(dy, ny, dtype);
    lb.ints(c.x).ints(c.y).ints(c.w ? *c.w : Dims{}).ints(out_shape);
    const Result<void> r = b.launch("lerp_grad", lb);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
    return {b.download(dx, nx), b.download(dy, ny)};
}

}  // namespace keel::test
