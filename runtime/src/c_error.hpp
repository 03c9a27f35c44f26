// The one place where the C ABI's keel_error* becomes a keel::Error.
#pragma once

#include <keel/keel.h>
#include <keel/result.hpp>

namespace keel::detail {

// Null -> ok. Otherwise copies code and message into an Error and destroys
// the keel_error (exactly once). A malformed error object (status OK, null
// message) becomes INTERNAL rather than being trusted.
[[nodiscard]] Result<void> take_error(keel_error* error) noexcept;

// The other way: an error the runtime hands to a plugin (a fallible host
// function's), owned by whoever receives it and released by its destroy.
// Null only when even that cannot be allocated.
[[nodiscard]] keel_error* make_c_error(const Error& error) noexcept;

}  // namespace keel::detail
