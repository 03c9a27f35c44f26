#include <keel/plugin/basic_kernels.hpp>

#include <string>

namespace keel::plugin {

namespace {
constexpr keel_dtype kF32[] = {KEEL_DTYPE_F32};
}

Result<FillArgs> parse_fill(const LaunchArgsView& args) {
    KEEL_TRY(args.expect_count(2));
    FillArgs f;
    KEEL_TRY_ASSIGN(f.out, args.buffer(0, "out", kF32));
    KEEL_TRY_ASSIGN(const double value, args.scalar_f64(1, "value"));
    f.value = static_cast<float>(value);
    f.count = f.out.size / sizeof(float);
    return f;
}

Result<AxpyArgs> parse_axpy(const LaunchArgsView& args) {
    KEEL_TRY(args.expect_count(3));
    AxpyArgs a;
    KEEL_TRY_ASSIGN(const double alpha, args.scalar_f64(0, "alpha"));
    a.alpha = static_cast<float>(alpha);
    KEEL_TRY_ASSIGN(a.x, args.buffer(1, "x", kF32));
    KEEL_TRY_ASSIGN(a.y, args.buffer(2, "y", kF32));
    if (a.x.size != a.y.size)
        return args.invalid("x has " + std::to_string(a.x.size) + " bytes, y has " + std::to_string(a.y.size) +
                            ": sizes must be equal");
    a.count = a.y.size / sizeof(float);
    return a;
}

}  // namespace keel::plugin
