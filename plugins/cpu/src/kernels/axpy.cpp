// axpy(alpha: scalar f32|f64, x: buffer f32, y: buffer f32): y = alpha * x + y.
#include "../kernel_registry.hpp"
#include "../parallel_for.hpp"

#include <keel/plugin/basic_kernels.hpp>

namespace keel::cpu::kernels {

Result<KernelWork> validate_axpy(const plugin::LaunchArgsView& args) {
    KEEL_TRY_ASSIGN(const plugin::AxpyArgs parsed, plugin::parse_axpy(args));
    KernelWork work;
    KEEL_TRY_ASSIGN(const std::size_t xi, work.use(parsed.x, Access::read, "x"));
    KEEL_TRY_ASSIGN(const std::size_t yi, work.use(parsed.y, Access::read_write, "y"));
    const std::size_t n = parsed.count;
    const float a = parsed.alpha;
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
