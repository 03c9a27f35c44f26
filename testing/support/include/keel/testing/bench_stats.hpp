// What the benchmarks that print a table share: the median of their runs and
// the machine's load, printed beside their figures (a loaded machine only
// ever slows a run down). Header-only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <vector>

namespace keel::testing {

// The median of `values`: the middle one, or the mean of the middle two for
// an even count; 0 for none.
[[nodiscard]] inline double median(std::vector<double> values) {
    if (values.empty()) return 0.0;
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The 1-minute load average; 0 where /proc/loadavg cannot be read.
[[nodiscard]] inline double load_average() {
    double load = 0;
    if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
        if (std::fscanf(f, "%lf", &load) != 1) load = 0;
        std::fclose(f);
    }
    return load;
}

}  // namespace keel::testing
