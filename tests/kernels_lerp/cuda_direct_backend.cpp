// The shared lerp tests on the CUDA kernels, called directly on a CUDA
// stream without a plugin. Skipped, with the reason, where no GPU is present.
#include "lerp.cuh"
#include "lerp_fixture.hpp"

#include <keel/plugin/kernel_args.hpp>

#include <cuda_runtime_api.h>

#include <cmath>

namespace keel::test {
namespace {

class CudaDirectBackend final : public LerpBackend {
public:
    CudaDirectBackend() {
        int count = 0;
        const cudaError_t e = cudaGetDeviceCount(&count);
        if (e != cudaSuccess) {
            why_ = std::string("no CUDA device: ") + cudaGetErrorString(e);
        } else if (count == 0) {
            why_ = "no CUDA device";
        } else if (cudaStreamCreate(&stream_) != cudaSuccess) {
            why_ = "cudaStreamCreate failed";
            stream_ = nullptr;
        }
    }
    ~CudaDirectBackend() override {
        for (void* p : buffers_) cudaFree(p);
        if (stream_) cudaStreamDestroy(stream_);
    }

    std::string unavailable_reason() const override { return why_; }
    std::vector<keel_dtype> dtypes() const override {
        return {cuda::kLerpCudaDtypes.begin(), cuda::kLerpCudaDtypes.end()};
    }
    double accumulation_roundoff(keel_dtype d) const override {
        return std::ldexp(1.0, d == KEEL_DTYPE_F64 ? -53 : -24);
    }
    keel_device_addr upload(std::span<const std::byte> bytes) override {
        if (bytes.empty()) return 0;
        void* p = nullptr;
        if (cudaMalloc(&p, bytes.size()) != cudaSuccess) {
            ADD_FAILURE() << "cudaMalloc of " << bytes.size() << " bytes failed";
            return 0;
        }
        buffers_.push_back(p);
        EXPECT_EQ(cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
        return reinterpret_cast<std::uintptr_t>(p);
    }
    std::vector<std::byte> download(keel_device_addr addr, std::size_t bytes) override {
        std::vector<std::byte> out(bytes);
        if (bytes) {
            EXPECT_EQ(cudaMemcpy(out.data(), reinterpret_cast<const void*>(addr), bytes,
                                 cudaMemcpyDeviceToHost),
                      cudaSuccess);
        }
        return out;
    }
    Result<void> launch(std::string_view kernel, const keel_launch_args& args) override {
        KEEL_TRY_ASSIGN(const plugin::LaunchArgsView view,
                        plugin::LaunchArgsView::make(&args, std::string(kernel)));
        if (kernel == "lerp") {
            KEEL_TRY_ASSIGN(const plugin::LerpPlan plan, plugin::plan_lerp(view, cuda::kLerpCudaDtypes));
            KEEL_TRY(cuda::enqueue_lerp(plan, stream_));
        } else if (kernel == "lerp_grad") {
            KEEL_TRY_ASSIGN(const plugin::LerpGradPlan plan,
                            plugin::plan_lerp_grad(view, cuda::kLerpCudaDtypes));
            KEEL_TRY(cuda::enqueue_lerp_grad(plan, stream_));
        } else {
            return Error(KEEL_STATUS_NOT_FOUND, "no kernel " + std::string(kernel));
        }
        const cudaError_t e = cudaStreamSynchronize(stream_);
        if (e != cudaSuccess)
            return Error(KEEL_STATUS_DEVICE_ERROR, std::string("[") + std::string(kernel) + "] " +
                                                       cudaGetErrorString(e));
        return ok();
    }

private:
    std::string why_;
    cudaStream_t stream_ = nullptr;
    std::vector<void*> buffers_;
};

INSTANTIATE_TEST_SUITE_P(
    Cuda, LerpKernel,
    ::testing::Values(LerpBackendFactory{"cuda_direct", [] { return std::make_unique<CudaDirectBackend>(); }}),
    [](const ::testing::TestParamInfo<LerpBackendFactory>& info) { return info.param.name; });

}  // namespace
}  // namespace keel::test
