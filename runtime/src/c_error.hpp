// The one place where the C ABI's keel_error* becomes a keel::Error.
#pragma once

#include <keel/keel.h>
#include <keel/result.hpp>

namespace keel::detail {

// Null -> ok. Otherwise copies code and message into an Error and destroys
// the keel_error (exactly once). A malformed error object (status OK, null
// message) becomes INTERNAL rather than being trusted.
[[nodiscard]] Result<void> take_error(keel_error* error) noexcept;

}  // namespace keel::detail
