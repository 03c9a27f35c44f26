// Fault injection for keel-soak, where the device under test can do it:
// the CPU plugin's seeded op and allocation failures (set before it loads),
// or a test driver that exports fake_ze_fail_calls (found in the process).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace soak {

// Before the Runtime is created: environment the plugins read at load.
void prepare_faults(const std::string& device_type);

// Between steps: arms one injected driver failure now and then, where a
// test driver offers it. Thread-safe.
void maybe_inject(std::mt19937_64& rng);

// What a test driver reports of itself (objects alive), or "".
[[nodiscard]] std::string driver_report();

// The fault matrix's driver faults (after prepare_faults): whether the
// driver in the process can inject them, the calls and results it injects,
// one failure of `call` after `skip` calls that run normally, and dropping
// whatever is still armed.
[[nodiscard]] bool driver_faults_available();
struct DriverFault {
    const char* call;
    int result;
    const char* result_name;
};
[[nodiscard]] std::vector<DriverFault> driver_faults();
void inject_driver_fault(const DriverFault& fault, std::uint32_t skip);
void reset_driver_faults();

}  // namespace soak
