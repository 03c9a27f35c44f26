// The resident set size of this process, for the tests and tools that check
// memory goes back to the OS. Header-only.
#pragma once

#include <cstdint>
#include <cstdio>
#include <unistd.h>

namespace keel {

// In bytes; 0 where /proc is missing.
inline std::uint64_t resident_bytes() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) return 0;
    unsigned long long pages = 0, resident = 0;
    const int read = std::fscanf(f, "%llu %llu", &pages, &resident);
    std::fclose(f);
    return read == 2 ? resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace keel
