// The symbols a shared library exports, read from its ELF dynamic symbol
// table (no dlopen, no tool): what keel-cts holds a plugin to.
#pragma once

#include <keel/result.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace keel::cts {

// Names of the defined, globally visible symbols of `file`'s .dynsym
// (functions and data; the linker's absolute version symbols excepted), in
// table order. INVALID_ARGUMENT when `file` is not a well-formed ELF
// shared object.
[[nodiscard]] Result<std::vector<std::string>> exported_symbols(const std::filesystem::path& file);

}  // namespace keel::cts
