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
            g_fail_calls = reinterpret_cast<FailCalls>(::dlsym(lib, "fake_ze_fail_calls"));
    }
}

void maybe_inject(std::mt19937_64& rng) {
    if (g_fail_calls == nullptr || rng() % 200 != 0) return;
    // Results by value: ZE_RESULT_ERROR_DEVICE_LOST, _OUT_OF_HOST_MEMORY,
    // _OUT_OF_DEVICE_MEMORY, _UNKNOWN.
    static constexpr std::array<int, 4> kResults{0x70000001, 0x70000002, 0x70000003, 0x7ffffffe};
    static constexpr std::array<const char*, 7> kCalls{
        "zeCommandListAppendMemoryCopy", "zeCommandListAppendMemoryFill", "zeEventHostSynchronize",
        "zeEventHostSignal", "zeEventQueryStatus", "zeMemAllocDevice", "zeCommandListAppendBarrier"};
    g_fail_calls(kCalls[rng() % kCalls.size()], kResults[rng() % kResults.size()],
                 static_cast<std::uint32_t>(rng() % 8), 1);
}

}  // namespace soak
