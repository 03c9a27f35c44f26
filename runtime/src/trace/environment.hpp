// KEEL_TRACE and KEEL_MEMORY_HISTORY, applied once per process by the first
// Runtime::create.
#pragma once

#include <keel/result.hpp>

namespace keel::trace {

// KEEL_MEMORY_HISTORY: switches the history (an invalid value is the error).
// KEEL_TRACE: on the first call, starts a session for the whole process,
// written at exit. A session started in code first keeps recording (the
// variable is then logged as ignored).
[[nodiscard]] Result<void> apply_environment();

}  // namespace keel::trace
