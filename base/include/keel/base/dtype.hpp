// Facts about keel's element types, shared by the plugins' support library
// and runtime-side code (communication) so that both spell them one way.
#pragma once

#include <keel/keel.h>

#include <cstddef>

namespace keel {

// Bytes per element; 0 for a dtype keel does not know (INVALID).
[[nodiscard]] constexpr std::size_t dtype_size(keel_dtype dtype) noexcept {
    switch (dtype) {
        case KEEL_DTYPE_I8:
        case KEEL_DTYPE_U8: return 1;
        case KEEL_DTYPE_F16:
        case KEEL_DTYPE_BF16: return 2;
        case KEEL_DTYPE_F32:
        case KEEL_DTYPE_I32:
        case KEEL_DTYPE_U32: return 4;
        case KEEL_DTYPE_F64:
        case KEEL_DTYPE_I64:
        case KEEL_DTYPE_U64: return 8;
        default: return 0;
    }
}

// "f32", "bf16", ...; "invalid" for a dtype keel does not know.
[[nodiscard]] constexpr const char* dtype_name(keel_dtype dtype) noexcept {
    switch (dtype) {
        case KEEL_DTYPE_F16: return "f16";
        case KEEL_DTYPE_BF16: return "bf16";
        case KEEL_DTYPE_F32: return "f32";
        case KEEL_DTYPE_F64: return "f64";
        case KEEL_DTYPE_I8: return "i8";
        case KEEL_DTYPE_I32: return "i32";
        case KEEL_DTYPE_I64: return "i64";
        case KEEL_DTYPE_U8: return "u8";
        case KEEL_DTYPE_U32: return "u32";
        case KEEL_DTYPE_U64: return "u64";
        default: return "invalid";
    }
}

}  // namespace keel
