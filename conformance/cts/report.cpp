#include "report.hpp"

#include "../rule.hpp"

#include <algorithm>

namespace keel::cts {

namespace {
std::string first_line(std::string text) {
    // ADD_FAILURE() and FAIL() start with a bare "Failed" line.
    if (text.starts_with("Failed\n")) text = text.substr(7);
    std::string line = text.substr(0, text.find('\n'));
    if (line.size() > 160) line = line.substr(0, 157) + "...";
    return line;
}

// GoogleTest prints a std::string parameter with quotes: "\"cpu:0\"".
std::string unquote(std::string s) {
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
    return s;
}
}  // namespace

DeviceTableListener::Group& DeviceTableListener::group(const std::string& device) {
    for (Group& g : groups_)
        if (g.device == device) return g;
    groups_.push_back({device, {}});
    return groups_.back();
}

namespace {
std::pair<std::string, std::string> device_and_test(const ::testing::TestInfo& info) {
    std::string name = info.name();
    name = name.substr(0, name.find('/'));
    return {info.value_param() ? unquote(info.value_param()) : "setup", name};
}
}  // namespace

void DeviceTableListener::OnTestStart(const ::testing::TestInfo& info) {
    std::lock_guard lock(mutex_);
    failure_.clear();
    skip_.clear();
    running_ = device_and_test(info);
    started_ = std::chrono::steady_clock::now();
}

std::chrono::steady_clock::duration DeviceTableListener::running_for() const {
    std::lock_guard lock(mutex_);
    return running_ ? std::chrono::steady_clock::now() - started_ : std::chrono::steady_clock::duration{};
}

std::vector<DeviceTableListener::Group> DeviceTableListener::groups(
    std::optional<std::chrono::seconds> running_too_long) const {
    std::lock_guard lock(mutex_);
    std::vector<Group> out = groups_;
    if (running_too_long && running_) {
        Check hung{running_->second, Outcome::failed,
                   "did not finish within " + std::to_string(running_too_long->count()) +
                       " s (a plugin call that never returns?)"};
        auto it = std::find_if(out.begin(), out.end(), [&](const Group& g) { return g.device == running_->first; });
        if (it == out.end()) it = out.insert(out.end(), Group{running_->first, {}});
        it->rows.push_back(std::move(hung));
    }
    return out;
}

void DeviceTableListener::OnTestPartResult(const ::testing::TestPartResult& result) {
    std::lock_guard lock(mutex_);
    if (result.failed() && failure_.empty()) {
        // "file:line: message": the message says what; the line says where.
        std::string where = result.file_name() ? std::string(result.file_name()) : "";
        where = where.substr(where.find_last_of('/') + 1);
        failure_ = first_line(result.message()) + " (" + where + ":" + std::to_string(result.line_number()) + ")";
    } else if (result.skipped() && skip_.empty()) {
        skip_ = first_line(result.message());
    }
}

void DeviceTableListener::OnTestEnd(const ::testing::TestInfo& info) {
    std::lock_guard lock(mutex_);
    running_.reset();
    const auto [device, name] = device_and_test(info);
    const ::testing::TestResult& r = *info.result();
    Check row{name, Outcome::passed, ""};
    if (r.Failed()) {
        row = {name, Outcome::failed, failure_.empty() ? "failed" : failure_};
    } else if (r.Skipped() && skip_.starts_with(conformance::kAdvicePrefix)) {
        row = {name, Outcome::advice, skip_.substr(std::string(conformance::kAdvicePrefix).size())};
    } else if (r.Skipped()) {
        row = {name, Outcome::skipped, skip_};
    }
    for (int i = 0; i < r.test_property_count(); ++i) {
        const std::string key = r.GetTestProperty(i).key();
        if (key == "keel_rule_since") row.since = r.GetTestProperty(i).value();
        if (key == "keel_rule") row.rule = r.GetTestProperty(i).value();
    }
    group(device).rows.push_back(std::move(row));
}

std::size_t print_table(std::ostream& out, const std::string& title, const std::vector<Check>& rows) {
    // The keel.h minor and identifier of the rule, where the row checks one.
    const auto label = [](const Check& c) {
        if (c.since.empty()) return c.name;
        return "[" + c.since + (c.rule.empty() ? "" : " " + c.rule) + "] " + c.name;
    };
    std::size_t width = 4;
    for (const Check& c : rows) width = std::max(width, label(c).size());
    std::size_t passed = 0, failed = 0, skipped = 0, advice = 0;
    out << "\n" << title << "\n";
    for (const Check& c : rows) {
        const std::string text = label(c);
        out << "  " << text << std::string(width - text.size() + 2, ' ');
        switch (c.outcome) {
            case Outcome::passed: out << "passed"; ++passed; break;
            case Outcome::failed: out << "FAILED: " << c.detail; ++failed; break;
            case Outcome::skipped: out << "skipped: " << c.detail; ++skipped; break;
            case Outcome::advice: out << "advice: " << c.detail; ++advice; break;
        }
        out << "\n";
    }
    out << "  -- " << passed << " passed, " << failed << " failed, " << skipped << " skipped, " << advice
        << " advice\n";
    return failed;
}

}  // namespace keel::cts
