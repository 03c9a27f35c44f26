// fill(out: buffer f32, value: scalar f32|f64): out[i] = value.
#include "../kernel_registry.hpp"
#include "../parallel_for.hpp"

#include <algorithm>

namespace keel::cpu::kernels {

Result<KernelWork> validate_fill(const plugin::LaunchArgsView& args) {
    static constexpr keel_dtype kF32[] = {KEEL_DTYPE_F32};
    KEEL_TRY(args.expect_count(2));
    KEEL_TRY_ASSIGN(plugin::BufferArg out, args.buffer(0, "out", kF32));
    KEEL_TRY_ASSIGN(double value, args.scalar_f64(1, "value"));
    KernelWork work;
    KEEL_TRY_ASSIGN(const std::size_t o, work.use(out, Access::write, "out"));
    const std::size_t n = out.size / sizeof(float);
    const float v = static_cast<float>(value);
    work.body = [o, n, v](const KernelBuffers& b) -> Result<void> {
        float* dst = b.get<float>(o);
        parallel_for(n, 1u << 18, [&](std::size_t begin, std::size_t end) { std::fill(dst + begin, dst + end, v); });
        return ok();
    };
    return work;
}

}  // namespace keel::cpu::kernels
