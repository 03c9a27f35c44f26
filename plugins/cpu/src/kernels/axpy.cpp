// axpy(alpha: scalar f32|f64, x: buffer f32, y: buffer f32): y = alpha * x + y.
#include "../kernel_registry.hpp"
#include "../parallel_for.hpp"

namespace keel::cpu::kernels {

Result<KernelWork> validate_axpy(const plugin::LaunchArgsView& args) {
    static constexpr keel_dtype kF32[] = {KEEL_DTYPE_F32};
    KEEL_TRY(args.expect_count(3));
    KEEL_TRY_ASSIGN(double alpha, args.scalar_f64(0, "alpha"));
    KEEL_TRY_ASSIGN(plugin::BufferArg x, args.buffer(1, "x", kF32));
    KEEL_TRY_ASSIGN(plugin::BufferArg y, args.buffer(2, "y", kF32));
    if (x.size != y.size)
        return args.invalid("x has " + std::to_string(x.size) + " bytes but y has " + std::to_string(y.size) +
                            ": they must be equal");
    KernelWork work;
    KEEL_TRY_ASSIGN(const std::size_t xi, work.use(x, Access::read, "x"));
    KEEL_TRY_ASSIGN(const std::size_t yi, work.use(y, Access::read_write, "y"));
    const std::size_t n = x.size / sizeof(float);
    const float a = static_cast<float>(alpha);
    work.body = [xi, yi, n, a](const KernelBuffers& b) -> Result<void> {
        const float* xs = b.get<const float>(xi);
        float* ys = b.get<float>(yi);
        parallel_for(n, 1u << 17, [&](std::size_t begin, std::size_t end) {
            for (std::size_t i = begin; i < end; ++i) ys[i] = a * xs[i] + ys[i];
        });
        return ok();
    };
    return work;
}

}  // namespace keel::cpu::kernels
