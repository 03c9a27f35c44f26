// Launches that do not fit the signature are refused with a clear error and
// write nothing.
#include "lerp_fixture.hpp"

#include <gmock/gmock.h>

namespace keel::test {
namespace {

using ::testing::HasSubstr;

// A valid lerp launch on [2, 3] tensors of `d`, for tests to break one part of.
struct ValidLerp {
    ValidLerp(LerpBackend& b, keel_dtype d) : dtype(d), bytes(6 * element_size(d)) {
        const std::vector<std::byte> zeros(bytes);
        x = b.upload(zeros);
        y = b.upload(zeros);
        w = b.upload(zeros);
        out = b.upload(nan_filled(d, 6));
    }
    void fill(LaunchArgs& lb, const Dims& out_shape = {2, 3}) const {
        lb.buffer(x, bytes, dtype).buffer(y, bytes, dtype).buffer(w, bytes, dtype);
        lb.buffer(out, bytes, dtype).ints({2, 3}).ints({2, 3}).ints({2, 3}).ints(out_shape);
    }
    keel_dtype dtype;
    std::size_t bytes;
    keel_device_addr x = 0, y = 0, w = 0, out = 0;
};

// Expects `r` to fail with `code` and a message containing `text`.
void expect_error(const Result<void>& r, keel_status code, const std::string& text) {
    ASSERT_FALSE(r.ok()) << "launch was accepted";
    EXPECT_EQ(r.error().code(), code) << r.error().message();
    EXPECT_THAT(r.error().message(), HasSubstr(text));
}

TEST_P(LerpKernel, RejectsAnOutShapeThatIsNotTheBroadcastShape) {
    const keel_dtype d = dtypes().front();
    ValidLerp v(device(), d);
    LaunchArgs lb;
    v.fill(lb, {3, 2});
    expect_error(device().launch("lerp", lb), KEEL_STATUS_INVALID_ARGUMENT,
                 "out_shape) [3, 2] is not the broadcast shape [2, 3]");
    EXPECT_EQ(device().download(v.out, v.bytes), nan_filled(d, 6)) << "out was written";
}

TEST_P(LerpKernel, RejectsShapesThatDoNotBroadcast) {
    const keel_dtype d = dtypes().front();
    LerpBackend& b = device();
    const std::size_t es = element_size(d);
    LaunchArgs lb;
    lb.buffer(b.upload(std::vector<std::byte>(6 * es)), 6 * es, d);
    lb.buffer(b.upload(std::vector<std::byte>(4 * es)), 4 * es, d).scalar_f64(0.5);
    lb.buffer(b.upload(std::vector<std::byte>(6 * es)), 6 * es, d);
    lb.ints({2, 3}).ints({4}).ints({}).ints({2, 3});
    expect_error(b.launch("lerp", lb), KEEL_STATUS_INVALID_ARGUMENT,
                 "x [2, 3] and y [4] do not broadcast");
}

TEST_P(LerpKernel, RejectsABufferOfAnotherDtype) {
    const keel_dtype d = dtypes().front();
    const keel_dtype other = d == KEEL_DTYPE_F64 ? KEEL_DTYPE_F32 : KEEL_DTYPE_F64;
    ValidLerp v(device(), d);
    LaunchArgs lb;
    v.fill(lb);
    lb.at(1).dtype = other;
    expect_error(device().launch("lerp", lb), KEEL_STATUS_INVALID_ARGUMENT,
                 "argument 1 (y): expected buffer of");
}

TEST_P(LerpKernel, RejectsABufferOfTheWrongSize) {
    const keel_dtype d = dtypes().front();
    ValidLerp v(device(), d);
    LaunchArgs lb;
    v.fill(lb);
    lb.at(3).value.buffer.size = v.bytes - element_size(d);
    expect_error(device().launch("lerp", lb), KEEL_STATUS_INVALID_ARGUMENT,
                 "argument 3 (out): size " + std::to_string(v.bytes - element_size(d)) +
                     " bytes, expected " + std::to_string(v.bytes));
}

TEST_P(LerpKernel, RejectsTheWrongNumberOfArguments) {
    ValidLerp v(device(), dtypes().front());
    LaunchArgs lb;
    v.fill(lb);
    lb.ints({1});
    expect_error(device().launch("lerp", lb), KEEL_STATUS_INVALID_ARGUMENT,
                 "expected 8 arguments, got 9");
}

TEST_P(LerpKernel, RejectsAScalarWeightWithAShape) {
    const keel_dtype d = dtypes().front();
    ValidLerp v(device(), d);
    LaunchArgs lb;
    lb.buffer(v.x, v.bytes, d).buffer(v.y, v.bytes, d).scalar_f64(0.5).buffer(v.out, v.bytes, d);
    lb.ints({2, 3}).ints({2, 3}).ints({2, 3}).ints({2, 3});
    expect_error(device().launch("lerp", lb), KEEL_STATUS_INVALID_ARGUMENT,
                 "w_shape) must be empty when w is a scalar");
}

TEST_P(LerpKernel, RejectsNonFloatTensorsAndReportsUnimplementedDtypes) {
    LerpBackend& b = device();
    for (keel_dtype d : {KEEL_DTYPE_I32, KEEL_DTYPE_F16, KEEL_DTYPE_BF16, KEEL_DTYPE_F32,
                         KEEL_DTYPE_F64}) {
        if (implements(d)) continue;
        const std::size_t bytes = 6 * 4;
        const keel_device_addr a = b.upload(std::vector<std::byte>(bytes));
        const keel_device_addr o = b.upload(std::vector<std::byte>(bytes));
        LaunchArgs lb;
        const std::uint64_t size = d == KEEL_DTYPE_I32 ? bytes : 6 * element_size(d);
        lb.buffer(a, size, d).buffer(a, size, d).scalar_f64(0.5).buffer(o, size, d);
        lb.ints({2, 3}).ints({2, 3}).ints({}).ints({2, 3});
        if (d == KEEL_DTYPE_I32)
            expect_error(b.launch("lerp", lb), KEEL_STATUS_INVALID_ARGUMENT,
                         "dtype i32 is not supported by lerp");
        else
            expect_error(b.launch("lerp", lb), KEEL_STATUS_UNIMPLEMENTED,
                         "is not implemented on this device");
    }
}

TEST_P(LerpKernel, RejectsAnOutputThatPartlyOverlapsAnInput) {
    const keel_dtype d = dtypes().front();
    ValidLerp v(device(), d);
    LaunchArgs lb;
    v.fill(lb);
    // out starts one element into a buffer as large as x.
    const keel_device_addr big = device().upload(std::vector<std::byte>(2 * v.bytes));
    lb.at(0).value.buffer.addr = big;
    lb.at(3).value.buffer.addr = big + element_size(d);
    expect_error(device().launch("lerp", lb), KEEL_STATUS_INVALID_ARGUMENT,
                 "argument 3 (out) overlaps argument 0 (x) without being the same buffer");
}

TEST_P(LerpKernel, LerpGradRejectsOverlappingGradientsAndWrongGradientSizes) {
    const keel_dtype d = dtypes().front();
    LerpBackend& b = device();
    const std::size_t es = element_size(d);
    const keel_device_addr dout = b.upload(std::vector<std::byte>(6 * es));
    const keel_device_addr grads = b.upload(std::vector<std::byte>(8 * es));
    {
        LaunchArgs lb;
        lb.absent(d).absent(d).scalar_f64(0.5).buffer(dout, 6 * es, d);
        lb.buffer(grads, 3 * es, d).buffer(grads + es, 6 * es, d);
        lb.ints({1, 3}).ints({2, 3}).ints({}).ints({2, 3});
        expect_error(b.launch("lerp_grad", lb), KEEL_STATUS_INVALID_ARGUMENT,
                     "argument 5 (dy) overlaps argument 4 (dx)");
    }
    {
        LaunchArgs lb;
        lb.absent(d).absent(d).scalar_f64(0.5).buffer(dout, 6 * es, d);
        lb.buffer(grads, 6 * es, d).absent(d);
        lb.ints({1, 3}).ints({2, 3}).ints({}).ints({2, 3});
        expect_error(b.launch("lerp_grad", lb), KEEL_STATUS_INVALID_ARGUMENT,
                     "argument 4 (dx): size " + std::to_string(6 * es) + " bytes, expected " +
                         std::to_string(3 * es));
    }
    {
        LaunchArgs lb;
        lb.absent(d).absent(d).scalar_f64(0.5).buffer(dout, 6 * es, d).absent(d).absent(d);
        lb.ints({1, 3}).ints({2, 3}).ints({}).ints({2, 4});
        expect_error(b.launch("lerp_grad", lb), KEEL_STATUS_INVALID_ARGUMENT,
                     "dout_shape) [2, 4] is not the broadcast shape [2, 3]");
    }
}

}  // namespace
}  // namespace keel::test
