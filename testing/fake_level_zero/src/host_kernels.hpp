// The host twins of the Level Zero plugin's kernels: the very OpenCL C
// sources of plugins/level_zero/kernels, compiled here as C++ with the few
// OpenCL built-ins they use emulated. The fake driver cannot run SPIR-V; it
// runs the twin of the kernel the module names, with the arguments exactly
// as the plugin set them, so the plugin's argument marshalling and the
// kernels' own index and summation logic are tested end to end. Only the
// SPIR-V translation of the sources is not (see the plugin's README).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace fake_ze {

struct HostKernel {
    struct Param {
        std::uint32_t size;
        bool pointer;  // a global pointer: translated from a device address
    };
    const char* name;
    std::vector<Param> params;
    // Runs work-items 0 .. global_size - 1 with these argument bytes.
    void (*run)(const std::vector<std::vector<std::byte>>& args, std::uint64_t global_size);
};

// The twin of the kernel called `name`, or null.
[[nodiscard]] const HostKernel* find_host_kernel(std::string_view name);

}  // namespace fake_ze
