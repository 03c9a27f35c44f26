// A test's knob from the environment, parsed by keel's one parser
// (<keel/environment.hpp>), for test code that has no Result to return.
// A value that does not parse stops the process with the parser's message,
// which names the variable and what it accepts: a knob set wrong is a
// mistake in the command, never a test result.
#pragma once

#include <keel/result.hpp>

#include <cstdio>
#include <cstdlib>
#include <optional>

namespace keel::testing {

// The parsed value, or `fallback` when the variable is unset or empty.
template <class T, class U>
[[nodiscard]] T knob(const Result<std::optional<T>>& parsed, U fallback) {
    if (!parsed.ok()) {
        std::fprintf(stderr, "%s\n", parsed.error().message().c_str());
        std::exit(2);
    }
    return parsed->value_or(static_cast<T>(fallback));
}

}  // namespace keel::testing
