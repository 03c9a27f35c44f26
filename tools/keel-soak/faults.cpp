#include "faults.hpp"

#include <keel/environment.hpp>

#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <string>

namespace soak {
namespace {

using FailCalls = void (*)(const char*, int, std::uint32_t, std::uint32_t);
FailCalls g_fail_calls = nullptr;
using LiveObjects = std::uint64_t (*)();
LiveObjects g_live_objects = nullptr;
using Reset = void (*)();
Reset g_reset = nullptr;

// Results by value: ZE_RESULT_ERROR_DEVICE_LOST, _OUT_OF_HOST_MEMORY,
// _OUT_OF_DEVICE_MEMORY, _UNKNOWN.
constexpr std::array<int, 4> kResults{0x70000001, 0x70000002, 0x70000003, 0x7ffffffe};
constexpr std::array<const char*, 4> kResultNames{"DEVICE_LOST", "OUT_OF_HOST_MEMORY", "OUT_OF_DEVICE_MEMORY",
                                                   "UNKNOWN"};
// The driver calls keel's Level Zero plugin makes while work runs or is
// enqueued, which the fake driver can fail.
constexpr std::array<const char*, 11> kCalls{
    "zeCommandListAppendMemoryCopy", "zeCommandListAppendMemoryFill", "zeCommandListAppendBarrier",
    "zeEventHostSynchronize",        "zeEventHostSignal",             "zeEventQueryStatus",
    "zeEventHostReset",              "zeMemAllocDevice",              "zeMemAllocHost",
    "zeCommandListCreateImmediate",  "zeEventCreate"};

}  // namespace

void prepare_faults(const std::string& device_type) {
    if (device_type == "cpu") {
        ::setenv("KEEL_CPU_CHECK", "1", 0);
        ::setenv("KEEL_CPU_FAIL_OP_PROB", "0.0005", 0);
        ::setenv("KEEL_CPU_FAIL_ALLOC_PROB", "0.0005", 0);
        return;
    }
    // A test driver named by the loader's alternative-driver variable.
    if (const auto path = keel::env::foreign("ZE_ENABLE_ALT_DRIVERS")) {
        if (void* lib = ::dlopen(std::string(*path).c_str(), RTLD_NOW | RTLD_GLOBAL))
        {
            g_fail_calls = reinterpret_cast<FailCalls>(::dlsym(lib, "fake_ze_fail_calls"));
            g_live_objects = reinterpret_cast<LiveObjects>(::dlsym(lib, "fake_ze_live_objects"));
            g_reset = reinterpret_cast<Reset>(::dlsym(lib, "fake_ze_reset"));
        }
    }
}

void maybe_inject(std::mt19937_64& rng) {
    if (g_fail_calls == nullptr || rng() % 200 != 0) return;
    g_fail_calls(kCalls[rng() % 8], kResults[rng() % kResults.size()], static_cast<std::uint32_t>(rng() % 8), 1);
}

bool driver_faults_available() { return g_fail_calls != nullptr && g_reset != nullptr; }

std::vector<DriverFault> driver_faults() {
    std::vector<DriverFault> out;
    for (const char* call : kCalls)
        for (std::size_t r : {0u, 1u})  // device-fatal, and transient
            out.push_back(DriverFault{call, kResults[r], kResultNames[r]});
    return out;
}

void inject_driver_fault(const DriverFault& fault, std::uint32_t skip) {
    if (g_fail_calls != nullptr) g_fail_calls(fault.call, fault.result, skip, 1);
}

void reset_driver_faults() {
    if (g_reset != nullptr) g_reset();
}

std::string driver_report() {
    if (g_live_objects == nullptr) return "";
    return std::to_string(g_live_objects()) + " objects alive";
}

}  // namespace soak
