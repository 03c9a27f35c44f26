// Shared by the CPU plugin benchmarks: load the plugin with settings, and
// fail a benchmark loudly when a call fails.
#pragma once

#include <keel/testing/loaded_plugin.hpp>
#include <keel/testing/scoped_env.hpp>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace keel::cpu::bench {

using keel::testing::LoadedPlugin;
using keel::testing::ScopedEnv;

inline void check(keel_error* e, const char* what) {
    if (e == nullptr) return;
    std::fprintf(stderr, "%s failed: %s\n", what, e->message);
    std::abort();
}
#define KEEL_BENCH_OK(expr) ::keel::cpu::bench::check((expr), #expr)

inline std::unique_ptr<LoadedPlugin> load(const ScopedEnv::Vars& env) {
    auto p = std::make_unique<LoadedPlugin>(KEEL_CPU_PLUGIN_PATH, LoadedPlugin::Options{env});
    if (p->init_error()) {
        std::fprintf(stderr, "plugin init failed: %s\n", p->init_error()->message.c_str());
        std::abort();
    }
    return p;
}

}  // namespace keel::cpu::bench
