// keel errors as PyTorch exceptions: c10::Error (Python RuntimeError) with
// keel's message, c10::OutOfMemoryError for OUT_OF_MEMORY. Every kernel and
// op of this library reports through these, so nothing aborts the process.
#pragma once

#include <c10/util/Exception.h>
#include <keel/result.hpp>

#include <utility>

namespace keel_torch {

[[noreturn]] inline void throw_error(const keel::Error& error) {
    if (error.code() == KEEL_STATUS_OUT_OF_MEMORY)
        TORCH_CHECK_WITH(OutOfMemoryError, false, "keel OUT_OF_MEMORY: ", error.message());
    TORCH_CHECK(false, "keel ", keel::status_name(error.code()), ": ", error.message());
}

// The value, or the error thrown as above.
template <class T>
T unwrap(keel::Result<T>&& result) {
    if (!result.ok()) throw_error(result.error());
    return std::move(result).value();
}

inline void unwrap(keel::Result<void>&& result) {
    if (!result.ok()) throw_error(result.error());
}

}  // namespace keel_torch
