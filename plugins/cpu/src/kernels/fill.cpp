// fill(out: buffer f32, value: scalar f32|f64): out[i] = value.
#include "../kernel_registry.hpp"
#include "../parallel_for.hpp"

#include <keel/plugin/basic_kernels.hpp>

#include <algorithm>

namespace keel::cpu::kernels {

Result<KernelWork> validate_fill(const plugin::LaunchArgsView& args) {
    KEEL_TRY_ASSIGN(const plugin::FillArgs f, plugin::parse_fill(args));
    KernelWork work;
    KEEL_TRY_ASSIGN(const std::size_t o, work.use(f.out, Access::write, "out"));
    const std::size_t n = f.count;
    const float v = f.value;
    work.body = [o, n, v](const KernelBuffers& b) -> Result<void> {
        float* dst = b.get<float>(o);
        parallel_for(n, 1u << 18, [&](std::size_t begin, std::size_t end) { std::fill(dst + begin, dst + end, v); });
        return ok();
    };
    return work;
}

}  // namespace keel::cpu::kernels
