// keel-cts's report: a table per plugin (its own checks) and per device
// (every conformance test: passed, failed with the reason, or skipped with
// the reason, e.g. an optional entry the plugin does not offer).
#pragma once

#include "table_check.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace keel::cts {

// Collects the outcome of every test as GoogleTest runs them. Thread-safe:
// a watchdog may read it while a test hangs inside a plugin.
class DeviceTableListener : public ::testing::EmptyTestEventListener {
public:
    struct Group {
        std::string device;  // "cpu:0", or "setup" for the suite's own checks
        std::vector<Check> rows;
    };

    void OnTestStart(const ::testing::TestInfo& info) override;
    void OnTestPartResult(const ::testing::TestPartResult& result) override;
    void OnTestEnd(const ::testing::TestInfo& info) override;

    // The groups so far; with `running_too_long`, the test running for
    // longer than that is added as failed ("did not finish").
    [[nodiscard]] std::vector<Group> groups(
        std::optional<std::chrono::seconds> running_too_long = std::nullopt) const;
    // How long the current test has run (zero between tests).
    [[nodiscard]] std::chrono::steady_clock::duration running_for() const;

private:
    Group& group(const std::string& device);
    mutable std::mutex mutex_;
    std::optional<std::pair<std::string, std::string>> running_;  // device, test
    std::chrono::steady_clock::time_point started_;
    std::string failure_;
    std::string skip_;
    std::vector<Group> groups_;
};

// Prints `rows` under `title`, aligned, with a count line; returns the
// number of failed rows.
std::size_t print_table(std::ostream& out, const std::string& title, const std::vector<Check>& rows);

}  // namespace keel::cts
