#include "format.hpp"

#include <cstdio>

namespace keel::detail {

std::string format_bytes(std::uint64_t bytes) {
    static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) return std::to_string(bytes) + " bytes";
    double v = static_cast<double>(bytes);
    int unit = -1;
    while (v >= 1024.0 && unit < 5) {
        v /= 1024.0;
        ++unit;
    }
    char text[64];
    std::snprintf(text, sizeof text, "%.4g %s", v, kUnits[unit]);
    return std::string(text) + " (" + std::to_string(bytes) + " bytes)";
}

}  // namespace keel::detail
