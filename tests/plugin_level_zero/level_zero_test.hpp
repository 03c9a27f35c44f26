// What the Level Zero plugin's tests share: the plugin loaded by its C table
// (keel::test_support), and a recorder of the statuses host functions get.
#pragma once

#include <keel/testing/gate.hpp>
#include <keel/testing/launch_args.hpp>
#include <keel/testing/loaded_plugin.hpp>
#include <keel/testing/result.hpp>

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

namespace keel::level_zero_test {

using keel::testing::buffer_arg;
using keel::testing::CError;
using keel::testing::f32_arg;
using keel::testing::f64_arg;
using keel::testing::Gate;
using keel::testing::LaunchArgs;
using keel::testing::LoadedPlugin;
using keel::testing::take;

// libkeel_level_zero.so: KEEL_LEVEL_ZERO_PLUGIN when set, else beside this
// executable as in the build tree, else where it was built.
[[nodiscard]] inline std::string plugin_path() {
    return keel::testing::find_plugin(env::Var::test_level_zero_plugin, KEEL_LEVEL_ZERO_PLUGIN_RELATIVE,
                                      KEEL_LEVEL_ZERO_PLUGIN_PATH);
}

// The error `e` reports, destroyed; code OK and no message for success.
[[nodiscard]] inline CError outcome(keel_error* e) { return take(e).value_or(CError{}); }

[[nodiscard]] inline bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// Records the status each host function got, in order.
class StatusLog {
public:
    static void record(void* self, keel_status status) {
        auto* log = static_cast<StatusLog*>(self);
        std::lock_guard lock(log->mutex_);
        log->seen_.push_back(status);
    }
    [[nodiscard]] std::vector<keel_status> get() const {
        std::lock_guard lock(mutex_);
        return seen_;
    }

private:
    mutable std::mutex mutex_;
    std::vector<keel_status> seen_;
};

}  // namespace keel::level_zero_test
