// The shared lerp tests on the CPU kernels, called directly with host
// memory (addresses here are host pointers), without the plugin.
#include "lerp.hpp"
#include "../parallel_for.hpp"
#include "lerp_fixture.hpp"

#include <keel/plugin/kernel_args.hpp>

#include <cstring>
#include <deque>

namespace keel::test {
namespace {

class CpuDirectBackend final : public LerpBackend {
public:
    // The kernels spread their tasks over the plugin's pool: start it as
    // the plugin does (one thread per core).
    CpuDirectBackend() { cpu::start_thread_pool(0); }
    ~CpuDirectBackend() override { cpu::stop_thread_pool(); }

    std::vector<keel_dtype> dtypes() const override {
        return {cpu::kLerpCpuDtypes.begin(), cpu::kLerpCpuDtypes.end()};
    }
    // Terms are computed in the dtype, then summed in f64.
    keel_dtype compute_dtype(keel_dtype d) const override { return d; }

    keel_device_addr upload(std::span<const std::byte> bytes) override {
        if (bytes.empty()) return 0;
        buffers_.emplace_back(bytes.begin(), bytes.end());
        return reinterpret_cast<std::uintptr_t>(buffers_.back().data());
    }
    std::vector<std::byte> download(keel_device_addr addr, std::size_t bytes) override {
        std::vector<std::byte> out(bytes);
        if (bytes) std::memcpy(out.data(), reinterpret_cast<const void*>(addr), bytes);
        return out;
    }
    Result<void> launch(std::string_view kernel, const LaunchArgs& args) override {
        KEEL_TRY_ASSIGN(const plugin::LaunchArgsView view,
                        plugin::LaunchArgsView::make(args.get(), std::string(kernel)));
        if (kernel == "lerp") {
            KEEL_TRY_ASSIGN(const plugin::LerpPlan plan, plugin::plan_lerp(view, cpu::kLerpCpuDtypes));
            return cpu::run_lerp(plan, {host(plan.x.addr), host(plan.y.addr),
                                        plan.w.is_scalar ? nullptr : host(plan.w.buffer.addr),
                                        host(plan.out.addr)});
        }
        if (kernel == "lerp_grad") {
            KEEL_TRY_ASSIGN(const plugin::LerpGradPlan plan,
                            plugin::plan_lerp_grad(view, cpu::kLerpCpuDtypes));
            return cpu::run_lerp_grad(plan, {host(plan.dout.addr),
                                             plan.w.is_scalar ? nullptr : host(plan.w.buffer.addr),
                                             host(plan.dx.addr), host(plan.dy.addr)});
        }
        return Error(KEEL_STATUS_NOT_FOUND, "no kernel " + std::string(kernel));
    }

private:
    // Buffers here are host memory: an address is the pointer (0: none).
    static void* host(keel_device_addr addr) { return reinterpret_cast<void*>(addr); }

    std::deque<std::vector<std::byte>> buffers_;  // deque: addresses stay put
};

INSTANTIATE_TEST_SUITE_P(
    Cpu, LerpKernel,
    ::testing::Values(LerpBackendFactory{"cpu_direct", [] { return std::make_unique<CpuDirectBackend>(); }}),
    [](const ::testing::TestParamInfo<LerpBackendFactory>& info) { return info.param.name; });

}  // namespace
}  // namespace keel::test
