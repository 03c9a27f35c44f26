// What every section of keel-memory-bench uses: the calling thread's CPU
// clock, and a bench that stops with keel's message on the first error.
#pragma once

#include <keel/result.hpp>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <utility>

namespace keel_bench {

inline double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

[[noreturn]] inline void stop(const char* what, const std::string& message) {
    std::fprintf(stderr, "keel-memory-bench: %s: %s\n", what, message.c_str());
    std::exit(1);
}

inline void check(keel::Result<void> r, const char* what) {
    if (!r.ok()) stop(what, r.error().message());
}

template <class T>
T check(keel::Result<T> r, const char* what) {
    if (!r.ok()) check(keel::Result<void>(r.error()), what);
    return std::move(r).value();
}

}  // namespace keel_bench
