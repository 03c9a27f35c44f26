// Linked instead of the generated modules when no SPIR-V toolchain was
// found at build time: the plugin then serves no kernels (kernel_get answers
// NOT_FOUND with this reason).
#include "spirv_modules.hpp"

namespace keel::level_zero {

const SpirvImage kSpirvCore{nullptr, 0};
const SpirvImage kSpirvFp64{nullptr, 0};
const char* const kSpirvMissingReason = KEEL_LEVEL_ZERO_SPIRV_MISSING;

}  // namespace keel::level_zero
