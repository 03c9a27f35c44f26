// test_illegal_address(): writes through an unmapped address, which makes
// CUDA fail the context with cudaErrorIllegalAddress (a sticky error), so
// tests can check that such errors reach the caller. Test-only:
// KEEL_CUDA_TEST_KERNELS=1.
#include "kernels/launch.cuh"

namespace keel::cuda {

namespace {

__global__ void illegal_address_kernel(int* unmapped) { *reinterpret_cast<volatile int*>(unmapped) = 1; }

Result<void> launch_illegal_address(const LaunchContext& ctx, const plugin::LaunchArgsView& args) {
    KEEL_TRY(args.expect_count(0));
    // Page 0 is never mapped in a CUDA context.
    return launch_kernel<illegal_address_kernel>(ctx, dim3(1), dim3(1), reinterpret_cast<int*>(0x10));
}

}  // namespace

extern const KernelDef kTestIllegalAddressKernel{"test_illegal_address", &launch_illegal_address, true};

}  // namespace keel::cuda
