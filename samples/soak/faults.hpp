// Fault injection for keel-soak, where the device under test can do it:
// the CPU plugin's seeded op and allocation failures (set before it loads),
// or a test driver that exports fake_ze_fail_calls (found in the process).
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace soak {

// Before the Runtime is created: environment the plugins read at load.
void prepare_faults(const std::string& device_type);

// Between steps: arms one injected driver failure now and then, where a
// test driver offers it. Thread-safe.
void maybe_inject(std::mt19937_64& rng);

}  // namespace soak
