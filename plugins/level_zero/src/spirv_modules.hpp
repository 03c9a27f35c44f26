// The SPIR-V modules compiled from kernels/*.cl at build time and embedded
// in the library (CMakeLists.txt: clang -target spir64, then llvm-spirv).
#pragma once

#include <cstddef>

namespace keel::level_zero {

struct SpirvImage {
    const unsigned char* data;
    std::size_t size;  // 0: not built
};

// kernels/core.cl: fill, axpy, lerp and lerp_grad in f32, f16 and bf16.
extern const SpirvImage kSpirvCore;
// kernels/fp64.cl: lerp and lerp_grad in f64.
extern const SpirvImage kSpirvFp64;
// Why the images are empty ("" when they were built).
extern const char* const kSpirvMissingReason;

}  // namespace keel::level_zero
