#include "report.hpp"

#include <algorithm>

namespace keel::cts {

namespace {
std::string first_line(const std::string& text) {
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

void DeviceTableListener::OnTestStart(const ::testing::TestInfo&) {
    failure_.clear();
    skip_.clear();
}

void DeviceTableListener::OnTestPartResult(const ::testing::TestPartResult& result) {
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
    std::string name = info.name();
    name = name.substr(0, name.find('/'));
    const std::string device = info.value_param() ? unquote(info.value_param()) : "setup";
    const ::testing::TestResult& r = *info.result();
    Check row{name, Outcome::passed, ""};
    if (r.Failed()) {
        row = {name, Outcome::failed, failure_.empty() ? "failed" : failure_};
    } else if (r.Skipped()) {
        row = {name, Outcome::skipped, skip_};
    }
    group(device).rows.push_back(std::move(row));
}

std::size_t print_table(std::ostream& out, const std::string& title, const std::vector<Check>& rows) {
    std::size_t width = 4;
    for (const Check& c : rows) width = std::max(width, c.name.size());
    std::size_t passed = 0, failed = 0, skipped = 0;
    out << "\n" << title << "\n";
    for (const Check& c : rows) {
        out << "  " << c.name << std::string(width - c.name.size() + 2, ' ');
        switch (c.outcome) {
            case Outcome::passed: out << "passed"; ++passed; break;
            case Outcome::failed: out << "FAILED: " << c.detail; ++failed; break;
            case Outcome::skipped: out << "skipped: " << c.detail; ++skipped; break;
        }
        out << "\n";
    }
    out << "  -- " << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
    return failed;
}

}  // namespace keel::cts
