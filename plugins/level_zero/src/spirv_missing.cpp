// Linked instead of the generated modules when no SPIR-V toolchain was
// found at build time: the plugin then serves no kernels (kernel_get answers
// NOT_FOUND with this reason).
#include "spirv_modules.hpp"

namespace keel::level_zero {

const SpirvImage kSpirvCore{nullptr, 0};
const SpirvImage kSpirvFp64{nullptr, 0};
const char* const kSpirvMissingReason =
    "no clang-N with a matching llvm-spirv-N (Debian: clang-14 and llvm-spirv-14) was found when it was built";

}  // namespace keel::level_zero
