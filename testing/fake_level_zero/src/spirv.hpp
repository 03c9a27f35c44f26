// A small SPIR-V reader: the module's kernel entry points and the size of
// each kernel parameter, so the fake driver can check zeKernelCreate and
// zeKernelSetArgumentValue against the module as a real driver would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fake_ze {

struct SpirvKernels {
    // Entry point name -> parameter sizes in bytes (a by-value struct
    // counts as the struct's size, a pointer as 8).
    std::map<std::string, std::vector<std::uint32_t>> kernels;
    std::string error;  // non-empty when the module is not valid SPIR-V we understand
};

[[nodiscard]] SpirvKernels read_spirv(const std::uint8_t* bytes, std::size_t size);

}  // namespace fake_ze
