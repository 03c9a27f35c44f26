// Answering device_native_handle / stream_native_handle (ABI 1.1).
#pragma once

#include <keel/keel.h>
#include <keel/result.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace keel::plugin {

// Writes `kind` and `value` into the caller's struct, only the fields that
// fit the struct_size it set. INVALID_ARGUMENT when `out` is null.
[[nodiscard]] inline Result<void> write_native_handle(keel_native_handle* out, keel_native_handle_kind kind,
                                                      std::uint64_t value) {
    if (out == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "out is null");
    keel_native_handle h{};
    h.struct_size = out->struct_size;
    h.kind = kind;
    h.value = value;
    std::memcpy(out, &h, std::min<std::size_t>(out->struct_size, sizeof h));
    return ok();
}

}  // namespace keel::plugin
