// keel-cts's report: a table per plugin (its own checks) and per device
// (every conformance test: passed, failed with the reason, or skipped with
// the reason, e.g. an optional entry the plugin does not offer).
#pragma once

#include "table_check.hpp"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace keel::cts {

// Collects the outcome of every test as GoogleTest runs them.
class DeviceTableListener : public ::testing::EmptyTestEventListener {
public:
    struct Group {
        std::string device;  // "cpu:0", or "setup" for the suite's own checks
        std::vector<Check> rows;
    };

    void OnTestStart(const ::testing::TestInfo& info) override;
    void OnTestPartResult(const ::testing::TestPartResult& result) override;
    void OnTestEnd(const ::testing::TestInfo& info) override;

    [[nodiscard]] const std::vector<Group>& groups() const noexcept { return groups_; }

private:
    Group& group(const std::string& device);
    std::string failure_;
    std::string skip_;
    std::vector<Group> groups_;
};

// Prints `rows` under `title`, aligned, with a count line; returns the
// number of failed rows.
std::size_t print_table(std::ostream& out, const std::string& title, const std::vector<Check>& rows);

}  // namespace keel::cts
