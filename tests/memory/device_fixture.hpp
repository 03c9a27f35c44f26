// The fixtures the memory tests share: a test over every device that may
// load (cpu:0, level_zero:0 on the fake driver, cuda:0 where a GPU is),
// skipped with the reason on a device that is not here, and the Runtime of
// a test file created once, after the settings it needs are in the
// environment (plugins read them once, when they are loaded).
#pragma once

#include <keel/keel.hpp>
#include <keel/testing/device_test_name.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

namespace keel::testing {

// Sets each variable (overwriting, unless `keep_if_set`), then loads the plugins.
struct EnvSetting {
    const char* name;
    const char* value;
    bool keep_if_set = false;  // a value the caller set wins (e.g. a seed to replay)
};
inline Runtime runtime_with(std::initializer_list<EnvSetting> settings) {
    for (const EnvSetting& s : settings) ::setenv(s.name, s.value, s.keep_if_set ? 0 : 1);
    return Runtime::create().expect("loading the plugins");
}

// The CPU plugin's checker with random delays: the settings of every test of
// keel_memory_cpu_tests, which share one process (and one loaded plugin).
inline Runtime checked_cpu_runtime() {
    return runtime_with({{"KEEL_CPU_CHECK", "1"}, {"KEEL_CPU_DELAY", "random:100"}, {"KEEL_CPU_SEED", "11"}});
}

// GetParam() is a device name; device() is that device, or the test is skipped.
class EveryDevice : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        auto found = runtime_.device(GetParam());
        if (!found.ok()) GTEST_SKIP() << GetParam() << " is not here: " << found.error().message();
        device_.emplace(std::move(*found));
    }
    [[nodiscard]] const Device& device() const { return *device_; }

    Runtime runtime_ = Runtime::create().expect("loading the plugins");
    std::optional<Device> device_;
};

}  // namespace keel::testing

// Instantiates `suite` (an EveryDevice) on every device that may load.
#define KEEL_ON_EVERY_DEVICE(suite)                                                                  \
    INSTANTIATE_TEST_SUITE_P(Devices, suite, ::testing::Values("cpu:0", "level_zero:0", "cuda:0"), \
                             ::keel::testing::device_test_name)
